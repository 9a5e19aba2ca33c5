"""Budgets: thread-safe limits on calls, tokens, USD, wall time and depth, nestable (session → run → sub-run).

Before a call its worst case is reserved on the budget and every ancestor; after it, the reservation is
settled with the provider's usage. A call that would cross a limit raises `BudgetExceeded` and is not sent.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rlm_kernel.callscope import call_scope, current_scope
from rlm_kernel.llm.config import load_config
from rlm_kernel.llm.errors import BudgetExceeded
from rlm_kernel.llm.schema import BUDGET_DIMS
from rlm_kernel.llm.session import LLMSession, current_session

__all__ = [
    "Budget",
    "BudgetExceeded",
    "Reservation",
    "budget_scope",
    "current_budget",
    "get_session_budget",
]

_UNITS = {d.limit: (d.unit, d.fmt) for d in BUDGET_DIMS}
_METERED = tuple(d for d in BUDGET_DIMS if d.metered)  # reserved before a call, settled after it


@dataclass
class Reservation:
    """What one call reserved (its worst case); settled or released exactly once."""

    input_tokens: int
    output_tokens: int
    usd: float
    done: bool = False


def _exceeded(limit: str, limit_value: float, used: float, requested: float, label: str) -> BudgetExceeded:
    what, fmt = _UNITS[limit]
    where = f" of budget {label!r}" if label else ""
    if limit == "max_seconds":
        text = (
            f"budget limit {limit}{where} reached: {fmt.format(used)} elapsed of {fmt.format(limit_value)}; "
            "the call was not sent"
        )
    elif limit == "max_depth":
        text = f"budget limit {limit}{where} reached: depth {used:.0f} would exceed {limit_value:.0f}"
    else:
        text = (
            f"budget limit {limit}{where} would be exceeded: limit {fmt.format(limit_value)}, "
            f"already used or reserved {fmt.format(used)}, "
            f"this call needs up to {fmt.format(requested)} {what}; "
            "the call was not sent"
        )
    return BudgetExceeded(text, limit=limit, limit_value=limit_value, used=used, requested=requested)


class Budget:
    """Limits (None = unlimited) and running totals; `child(...)` makes a nested budget also charged here.

    Figures: `calls` (sent and answered), `input_tokens`, `output_tokens`, `usd` (provider usage × price),
    `cached` (cache hits: free, counted), `failed`, `usd_unknown` (calls whose price is unknown).
    """

    def __init__(
        self,
        max_calls: int | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_usd: float | None = None,
        max_seconds: float | None = None,
        max_depth: int | None = None,
        parent: Budget | None = None,
        label: str = "",
    ) -> None:
        self.limits: dict[str, float | None] = {
            "max_calls": max_calls,
            "max_input_tokens": max_input_tokens,
            "max_output_tokens": max_output_tokens,
            "max_usd": max_usd,
            "max_seconds": max_seconds,
            "max_depth": max_depth,
        }
        for name, value in self.limits.items():
            if value is not None and (not isinstance(value, int | float) or value < 0):
                raise ValueError(f"budget {name} must be a number ≥ 0 or None, got {value!r}")
        self.parent = parent
        self.label = label
        self.scope_id = f"b{uuid.uuid4().hex[:12]}"
        """Names this budget in requests to the LLM broker (its ledger keeps one budget per id)."""
        self.depth = parent.depth + 1 if parent else 0
        self._lock: threading.RLock = parent._lock if parent else threading.RLock()
        self._started = time.monotonic()
        self._used = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "usd": 0.0}
        self._reserved = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "usd": 0.0}
        self._counts = {"cached": 0, "failed": 0, "usd_unknown": 0, "refused": 0}
        for b in self._chain()[1:]:
            limit = b.limits["max_depth"]
            if limit is not None and self.depth - b.depth > limit:
                raise _exceeded("max_depth", limit, self.depth - b.depth, 1, b.label)

    def __repr__(self) -> str:
        set_limits = {k: v for k, v in self.limits.items() if v is not None}
        return f"Budget(depth={self.depth}, limits={set_limits}, used={self._used})"

    def set_limits(self, **limits: float | None) -> None:
        """Change limits in place (None removes one); spending so far is kept. Unknown names are an error."""
        for name, value in limits.items():
            if name not in self.limits:
                raise ValueError(f"unknown budget limit {name!r}; use one of {', '.join(self.limits)}")
            if value is not None and (not isinstance(value, int | float) or value < 0):
                raise ValueError(f"budget {name} must be a number ≥ 0 or None, got {value!r}")
        with self._lock:
            self.limits.update(limits)

    def child(self, **limits: Any) -> Budget:
        """A nested budget (e.g. one `%%rlm` run or one `map_reduce`); its spending also counts here."""
        return Budget(parent=self, **limits)

    def _chain(self) -> list[Budget]:
        chain, b = [], self
        while b is not None:
            chain.append(b)
            b = b.parent
        return chain

    @property
    def elapsed(self) -> float:
        """Seconds since this budget was created."""
        return time.monotonic() - self._started

    def reserve(
        self, input_tokens: int, output_tokens: int, usd: float | None, *, check: bool = True
    ) -> Reservation:
        """Reserve a call's worst case on this budget and every ancestor, or raise `BudgetExceeded`.

        `usd` None (unknown price) means the call is accounted in tokens only. `check=False` records a
        reservation another ledger (the LLM broker's) already granted, without checking the limits here.
        """
        usd_value = usd or 0.0
        with self._lock:
            chain = self._chain()
            for b in chain if check else ():
                b._check(input_tokens, output_tokens, usd_value)
            for b in chain:
                b._reserved["calls"] += 1
                b._reserved["input_tokens"] += input_tokens
                b._reserved["output_tokens"] += output_tokens
                b._reserved["usd"] += usd_value
        return Reservation(input_tokens, output_tokens, usd_value)

    def _check(self, input_tokens: int, output_tokens: int, usd: float) -> None:
        lim = self.limits
        try:
            if lim["max_seconds"] is not None and self.elapsed >= lim["max_seconds"]:
                raise _exceeded("max_seconds", lim["max_seconds"], self.elapsed, 0, self.label)
            needs = {"calls": 1, "input_tokens": input_tokens, "output_tokens": output_tokens, "usd": usd}
            for dim in _METERED:
                limit, key, need = dim.limit, dim.used, needs[dim.used]
                value = lim[limit]
                if value is None:
                    continue
                taken = self._used[key] + self._reserved[key]
                if taken + need > value + 1e-12:
                    raise _exceeded(limit, value, taken, need, self.label)
        except BudgetExceeded:
            self._counts["refused"] += 1
            raise

    def settle(
        self, reservation: Reservation, input_tokens: int, output_tokens: int, usd: float | None
    ) -> None:
        """Replace a reservation by the provider's reported usage (`usd` None: price unknown)."""
        with self._lock:
            if reservation.done:
                return
            reservation.done = True
            for b in self._chain():
                b._unreserve(reservation)
                b._used["calls"] += 1
                b._used["input_tokens"] += input_tokens
                b._used["output_tokens"] += output_tokens
                b._used["usd"] += usd or 0.0
                if usd is None:
                    b._counts["usd_unknown"] += 1

    def release(self, reservation: Reservation, *, failed: bool = True) -> None:
        """Drop a reservation for a call that got no usable reply (counted as failed, costs nothing)."""
        with self._lock:
            if reservation.done:
                return
            reservation.done = True
            for b in self._chain():
                b._unreserve(reservation)
                if failed:
                    b._counts["failed"] += 1

    def _unreserve(self, r: Reservation) -> None:
        self._reserved["calls"] -= 1
        self._reserved["input_tokens"] -= r.input_tokens
        self._reserved["output_tokens"] -= r.output_tokens
        self._reserved["usd"] -= r.usd

    def record_refused(self) -> None:
        """Count a call another ledger (the LLM broker's) refused at this budget's limit."""
        with self._lock:
            self._counts["refused"] += 1

    def record_cached(self) -> None:
        """Count a cache hit (free) on this budget and every ancestor."""
        with self._lock:
            for b in self._chain():
                b._counts["cached"] += 1

    def snapshot(self) -> dict[str, Any]:
        """Plain figures: limits, used, reserved (in flight), remaining, counts, elapsed seconds and depth."""
        with self._lock:
            used = dict(self._used)
            reserved = dict(self._reserved)
            counts = dict(self._counts)
        remaining: dict[str, float | None] = {}
        for dim in _METERED:
            limit, key = dim.limit, dim.used
            value = self.limits[limit]
            remaining[key] = None if value is None else max(0.0, value - used[key] - reserved[key])
        if self.limits["max_seconds"] is not None:
            remaining["seconds"] = max(0.0, self.limits["max_seconds"] - self.elapsed)
        return {
            "label": self.label,
            "depth": self.depth,
            "limits": {k: v for k, v in self.limits.items() if v is not None},
            **used,
            **counts,
            "reserved": reserved,
            "remaining": remaining,
            "elapsed_s": self.elapsed,
        }


def _configured_limits(session: LLMSession) -> dict[str, Any]:
    try:
        limits = load_config(session=session).budget_limits
    except Exception:  # noqa: BLE001 - an unusable config surfaces on the first call, not here
        limits = {}
    return {d.limit: limits.get(d.limit) for d in BUDGET_DIMS}


def get_session_budget(session: LLMSession | None = None) -> Budget:
    """The session's budget (the current session unless given): limits from the `budget_*` settings
    (unlimited by default).

    Created on first use; after `%rlm set budget_...` its limits follow the settings, keeping what was spent.
    """
    s = session or current_session()
    with s.lock:
        version = s.settings_version
        if s.budget is None:
            s.budget = Budget(label="session", **_configured_limits(s))
        elif version != s.budget_version:
            s.budget.set_limits(**_configured_limits(s))
        s.budget_version = version
        return s.budget


@contextmanager
def budget_scope(budget: Budget) -> Iterator[Budget]:
    """Charge every call made in this context without an explicit `budget=` to `budget` (e.g. a run's).

    Sets the `budget` of the call scope (`rlm_kernel.callscope`); `rlm_run` sets it (and its run) around its
    turns, so helpers that call the LLM layer directly (`map_reduce`, `find_relevant(use_llm_scoring=True)`)
    are charged to the run, not to the session.
    """
    with call_scope(budget=budget):
        yield budget


def current_budget() -> Budget:
    """The budget of the call scope of this context, else the session's."""
    scoped = current_scope().budget
    return scoped if scoped is not None else get_session_budget()
