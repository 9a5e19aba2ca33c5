"""The settings schema: every LLM setting and every budget dimension, declared once.

`LLMConfig` and `load_config`, the `RLM_*` environment variables, the TOML tables, `%rlm set` validation,
`%rlm show`, `Budget`'s limits and messages and the budget displays (widgets) are all read from here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BUDGET_DIMS",
    "CACHE_MODES",
    "ERRORS_IN_MODEL_CODE",
    "LLM_SETTINGS",
    "LOCAL_MODEL_KEYS",
    "PROVIDERS",
    "TIERS",
    "BudgetDim",
    "Setting",
    "budget_dim",
]

TIERS = ("fast", "balanced", "powerful")
PROVIDERS = ("openai", "anthropic", "gemini", "local")
CACHE_MODES = ("off", "readwrite", "replay")
LOCAL_MODEL_KEYS = ("tiny", "coder")  # offline models: see rlm_kernel/llm/local_models.py
ERRORS_IN_MODEL_CODE = ("raise", "string")  # a failed model call in model-written code (repl/helpers)


# ---- parsers: a raw value (%rlm set or environment text, or a TOML value) → the value, or ValueError
def positive_int(v: Any) -> int:
    n = int(v)
    if isinstance(v, float) and not v.is_integer():
        raise ValueError
    if n < 1:
        raise ValueError
    return n


def non_negative_int(v: Any) -> int:
    n = int(v)
    if n < 0:
        raise ValueError
    return n


def positive_float(v: Any) -> float:
    x = float(v)
    if not math.isfinite(x) or x <= 0:
        raise ValueError
    return x


def non_negative_float(v: Any) -> float:
    x = float(v)
    if not math.isfinite(x) or x < 0:
        raise ValueError
    return x


def text(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError
    return v.strip()


def choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        s = str(v).strip().lower()
        if s not in options:
            raise ValueError
        return s

    check.__doc__ = "one of " + ", ".join(options)
    return check


def prices(v: Any) -> dict[str, tuple[float, float]]:
    if not isinstance(v, Mapping):
        raise ValueError
    out: dict[str, tuple[float, float]] = {}
    for model, price in v.items():
        if isinstance(price, Mapping):
            pin, pout = price["input"], price["output"]
        else:
            pin, pout = price
        out[str(model)] = (non_negative_float(pin), non_negative_float(pout))
    return out


@dataclass(frozen=True)
class Setting:
    """One LLM setting: `%rlm set name=…`, `RLM_<NAME>` (unless `env` is False), the TOML file.

    `field`: a plain field of `LLMConfig` of the same name (False: resolved by `load_config` itself).
    `shown`: listed by `%rlm show` (`LLMConfig.as_display`).
    """

    name: str
    parse: Callable[[Any], Any]
    default: Any
    what: str
    """What a valid value is (the error message of a bad one)."""
    env: bool = True
    field: bool = True
    shown: bool = True

    @property
    def env_var(self) -> str | None:
        return "RLM_" + self.name.upper() if self.env else None


@dataclass(frozen=True)
class BudgetDim:
    """One budget dimension: the limit `max_<name>` (setting `budget_max_<name>`), what it counts, its units.

    `used`: the key of the spent figure in `Budget.snapshot()` (and the widgets' normalised snapshot);
    `metered`: reserved before each call and settled after it (calls, tokens, USD), else checked as it is;
    `kind`: how displays format it (count, usd, seconds, depth); `line`: its label on the budget text line
    (None: not on that line); `gauge`: its label in the budget widget.
    """

    name: str
    parse: Callable[[Any], Any]
    what: str
    used: str
    unit: str
    fmt: str
    kind: str
    metered: bool
    line: str | None
    gauge: str

    @property
    def limit(self) -> str:
        return f"max_{self.name}"

    @property
    def setting(self) -> str:
        return f"budget_max_{self.name}"


BUDGET_DIMS: tuple[BudgetDim, ...] = (
    BudgetDim("calls", positive_int, "a whole number ≥ 1", "calls", "calls", "{:.0f}", "count", True,
              "calls", "calls"),
    BudgetDim("input_tokens", positive_int, "a whole number ≥ 1", "input_tokens", "input tokens", "{:.0f}",
              "count", True, "in tokens", "input tokens"),
    BudgetDim("output_tokens", positive_int, "a whole number ≥ 1", "output_tokens", "output tokens",
              "{:.0f}", "count", True, "out tokens", "output tokens"),
    BudgetDim("usd", non_negative_float, "US dollars ≥ 0", "usd", "USD", "${:.4f}", "usd", True, "USD",
              "cost"),
    BudgetDim("seconds", positive_float, "seconds > 0", "elapsed_s", "seconds", "{:.1f} s", "seconds", False,
              None, "time"),
    BudgetDim("depth", non_negative_int, "a whole number ≥ 0", "depth", "depth", "{:.0f}", "depth", False,
              None, "depth"),
)  # fmt: skip


def budget_dim(limit: str) -> BudgetDim:
    """The dimension of a limit name (`max_usd`); KeyError for an unknown one."""
    for dim in BUDGET_DIMS:
        if dim.limit == limit:
            return dim
    raise KeyError(limit)


LLM_SETTINGS: tuple[Setting, ...] = (
    Setting("provider", choice(PROVIDERS), None, "one of " + ", ".join(PROVIDERS), field=False),
    Setting("base_url", text, None, "a URL such as https://api.openai.com/v1", field=False),
    Setting("api_key", text, None, "an API key", field=False),
    Setting("model", text, None, "a model name (used for every tier not set on its own)", field=False,
            shown=False),
    *(Setting(f"model_{tier}", text, None, "a model name", field=False) for tier in TIERS),
    Setting("root_model", text, "powerful", "a tier (fast|balanced|powerful|auto) or a model name"),
    Setting("concurrency", positive_int, 16, "a whole number ≥ 1"),
    Setting("max_connections", positive_int, 100, "a whole number ≥ 1"),
    Setting("max_retries", non_negative_int, 4, "a whole number ≥ 0"),
    Setting("timeout", positive_float, 120.0, "seconds > 0 (read timeout of one attempt)"),
    Setting("connect_timeout", positive_float, 10.0, "seconds > 0"),
    Setting("retry_after_cap", non_negative_float, 60.0,
            "seconds ≥ 0 (longest server-requested wait honoured)"),
    Setting("max_tokens", positive_int, 1024, "a whole number ≥ 1"),
    Setting("temperature", non_negative_float, 0.0, "a number ≥ 0"),
    Setting("auto_fast_max_tokens", positive_int, 8000, "a whole number ≥ 1 (prompt tokens)"),
    Setting("cache", choice(CACHE_MODES), "readwrite", "one of " + ", ".join(CACHE_MODES)),
    Setting("cache_dir", text, "@per-user", "a directory path (default @per-user: a per-user folder for the "
            "notebook's directory, outside the context roots)"),
    Setting("proxy", text, None, "an http(s) proxy URL (HTTP(S)_PROXY are not read)"),
    Setting("local_model", choice(LOCAL_MODEL_KEYS), "tiny", "one of tiny, coder (the offline model)"),
    Setting("errors_in_model_code", choice(ERRORS_IN_MODEL_CODE), "raise",
            "raise or string (a failed llm_query/rlm_query call in model-written code raises, or returns "
            "'Error: <reason>'; the person's cells always raise)"),
    *(Setting(d.setting, d.parse, None, d.what, field=False) for d in BUDGET_DIMS),
    Setting("prices", prices, None, "a table model → {input = USD per 1M tokens, output = USD per 1M tokens}",
            env=False, field=False, shown=False),
)  # fmt: skip
