"""Plain-text rendering of fan-outs and budgets: the summary line written when a batch ends, the budget line.

The summary is deterministic except for one timing field, `took N.N s`, which `nbval_sanitize.cfg` strips.
"""

from __future__ import annotations

from collections.abc import Mapping

from rlm_kernel.llm.schema import BUDGET_DIMS
from rlm_kernel.widgets.state import FanoutSnapshot

__all__ = [
    "SANITIZE_CFG",
    "budget_line",
    "fanout_summary",
    "format_duration",
    "format_tokens",
    "format_usd",
]

SANITIZE_CFG = "nbval_sanitize.cfg"
"""File name (next to this module) of the nbval sanitize file that strips the timing field of summaries."""


def format_tokens(n: int) -> str:
    return f"{int(n):,}"


def format_usd(x: float) -> str:
    return f"${x:,.4f}"


def format_duration(seconds: float) -> str:
    """`0.4 s`, `12.0 s`, `125.3 s` — always seconds so one regex sanitises every value."""
    return f"{max(0.0, seconds):.1f} s"


def _title(snap: FanoutSnapshot) -> str:
    return f"fan-out ({snap.label})" if snap.label else "fan-out"


def fanout_summary(snap: FanoutSnapshot, *, timing: bool = True) -> str:
    """The one-line final summary of a batch, e.g.

    `fan-out: 200/200 done · 0 failed · 3 cached · 12,400 in / 3,100 out tokens · $0.0000 · took 1.2 s`

    Everything but the `took … s` field is a deterministic function of the calls; `timing=False` drops it.
    """
    parts = [
        f"{_title(snap)}: {snap.done}/{snap.total} done",
        f"{snap.failed} failed",
        f"{snap.cached} cached",
    ]
    if snap.retried:
        parts.append(f"{snap.retried} retried")
    if snap.cancelled:
        parts.append(f"{snap.cancelled} cancelled")
    if snap.children:
        n = snap.nested_count
        parts.append(f"{n} nested fan-out{'s' if n != 1 else ''}")
    parts.append(f"{format_tokens(snap.input_tokens)} in / {format_tokens(snap.output_tokens)} out tokens")
    parts.append(format_usd(snap.cost_usd))
    if snap.finished and snap.completed < snap.total:
        parts.append(f"stopped with {snap.total - snap.completed} not run")
    if timing:
        parts.append(f"took {format_duration(snap.elapsed_s)}")
    return " · ".join(parts)


_BUDGET_FIELDS: tuple[tuple[str, str, str], ...] = tuple(
    (d.used, d.limit, d.line) for d in BUDGET_DIMS if d.line is not None
)  # (snapshot key, cap key, label) of the dimensions on the budget line


def budget_line(snapshot: Mapping[str, object]) -> str:
    """`budget: 12 calls · 1,234 in / 567 out tokens · $0.0123 · 3 cache hits · depth 0`, caps as `of N`.

    Reads the normalised dict produced by `rlm_kernel.widgets.budget.normalise_snapshot`.
    """

    def num(key: str) -> float:
        value = snapshot.get(key)
        return float(value) if isinstance(value, int | float) else 0.0

    def cap(key: str) -> float | None:
        value = snapshot.get(key)
        return float(value) if isinstance(value, int | float) else None

    parts: list[str] = []
    for key, cap_key, label in _BUDGET_FIELDS:
        used, limit = num(key), cap(cap_key)
        if key == "usd":
            text = format_usd(used) + (f" of {format_usd(limit)}" if limit is not None else "")
        else:
            text = format_tokens(int(used)) + (
                f" of {format_tokens(int(limit))}" if limit is not None else ""
            )
            text += f" {label}"
        parts.append(text)
    parts.append(f"{int(num('cache_hits'))} cache hits")
    depth_cap = cap("max_depth")
    parts.append(f"depth {int(num('depth'))}" + (f" of {int(depth_cap)}" if depth_cap is not None else ""))
    return "budget: " + " · ".join(parts)
