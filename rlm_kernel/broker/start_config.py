"""What the broker holds from the start: budget limits, cache places and prices the kernel may only narrow.

Every frame from the kernel is hostile (a full escape in the kernel process can write any frame). So the
settings that bound what the broker spends or where it writes come from the broker's own environment and
settings file, read when it starts — the notebook author's start-time configuration:

- the session's budget limits (`RLM_BUDGET_MAX_*`, `[budget]`): the ledger's root budget, shared by every
  chain the kernel names; a kernel's limits count only where they are tighter (`narrow`);
- where a response cache may be (`cache_dir`): under the start-time cache directory only;
- prices: the start-time table and the built-in one; a kernel's price counts only where it is higher;
- the numbers that shape traffic (retries, connections, timeouts): bounded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlm_kernel.llm.config import load_config, start_cache_dir
from rlm_kernel.llm.errors import ConfigError
from rlm_kernel.llm.pricing import price_for
from rlm_kernel.llm.schema import BUDGET_DIMS

__all__ = ["BOUNDS", "StartConfig"]

BOUNDS = {
    "concurrency": (1, 4096),
    "max_connections": (1, 4096),
    "max_retries": (0, 20),
    "timeout": (0.001, 3600.0),
    "connect_timeout": (0.001, 600.0),
    "retry_after_cap": (0.0, 3600.0),
}
"""Range of each traffic-shaping engine field a kernel may send (outside it: refused)."""


def _number(fields: dict[str, Any], key: str, kind: type) -> Any:
    value = fields.get(key)
    low, high = BOUNDS[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(f"the broker refused {key}={value!r}: it must be from {low} to {high}", key=key)
    return kind(value)


@dataclass(frozen=True)
class StartConfig:
    """The broker's start-time configuration (see the module docstring)."""

    limits: dict[str, float] = field(default_factory=dict)
    """Start-time budget limits by limit name (`max_calls`...), only those set."""
    cache_dir: Path | None = None
    """The start-time cache directory: an engine's cache must be it or below it."""
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    problem: str | None = None
    """Why the start-time configuration could not be read (then every request is refused)."""

    @classmethod
    def from_environment(cls) -> StartConfig:
        """Read from this process's environment and settings file (the broker's: the launcher's)."""
        try:
            config = load_config(use_settings=False)
        except ConfigError as exc:
            if _budget_error(exc):
                return cls(problem=str(exc))
            config = None
        raw = os.environ.get("RLM_CACHE_DIR")
        cache_dir = Path(config.cache_dir) if config is not None else start_cache_dir(raw)
        return cls(
            limits=dict(config.budget_limits) if config is not None else {},
            cache_dir=cache_dir.resolve(),
            prices=dict(config.prices) if config is not None else {},
        )

    def check(self) -> None:
        if self.problem is not None:
            raise ConfigError(f"the LLM broker could not read its start-time settings: {self.problem}")

    def narrow(self, limits: dict[str, Any]) -> dict[str, Any]:
        """`limits` (a kernel's) with each start-time limit where it is tighter or the kernel set none."""
        out = dict(limits)
        for name, start in self.limits.items():
            value = out.get(name)
            out[name] = start if value is None else min(value, start)
        return out

    def root_limits(self) -> dict[str, Any]:
        """The limits of the ledger's root budget (depth is the kernel's to count: it is narrowed on the
        kernel's own session budget instead)."""
        return {d.limit: self.limits.get(d.limit) for d in BUDGET_DIMS if d.limit != "max_depth"}

    def cache_dir_for(self, raw: Any) -> str:
        """An engine's cache directory, refused unless it is the start-time one or below it."""
        self.check()
        if not isinstance(raw, str) or not raw:
            raise ConfigError("the broker needs the engine's cache_dir as a path", key="cache_dir")
        resolved = Path(raw).expanduser().resolve()
        place = self.cache_dir
        if place is None or not (resolved == place or resolved.is_relative_to(place)):
            raise ConfigError(
                f"the LLM broker refused cache_dir {resolved}: a response cache may only be in the cache "
                f"directory configured when the kernel started ({place}) or below it; set RLM_CACHE_DIR "
                "before starting the kernel",
                key="cache_dir",
            )
        return str(resolved)

    def prices_for(self, raw: Any) -> dict[str, tuple[float, float]]:
        """The start-time prices, raised (never lowered) by a kernel's table: a price below the start-time
        or built-in one would let calls look cheaper than they are to the USD budget."""
        out = dict(self.prices)
        for model, pair in (raw or {}).items() if isinstance(raw, dict) else ():
            pin, pout = (float(pair[0]), float(pair[1]))
            if not (pin >= 0 and pout >= 0):
                raise ConfigError(f"the broker refused a negative price for {model!r}", key="prices")
            floor = out.get(str(model)) or price_for(str(model)) or (0.0, 0.0)
            out[str(model)] = (max(pin, floor[0]), max(pout, floor[1]))
        return out

    def traffic(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The traffic-shaping engine fields, checked against `BOUNDS`."""
        kinds = {"concurrency": int, "max_connections": int, "max_retries": int}
        return {key: _number(fields, key, kinds.get(key, float)) for key in BOUNDS}


def _budget_error(exc: ConfigError) -> bool:
    key = getattr(exc, "key", None) or ""
    return isinstance(key, str) and key.startswith("budget_")
