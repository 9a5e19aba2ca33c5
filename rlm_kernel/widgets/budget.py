"""The budget widget: calls, tokens, USD against each cap (warning/danger gauges), cache hits, current depth.

One live view per `Budget` (the session's and per-run ones), refreshed (coalesced) as call events arrive.
"""

from __future__ import annotations

import html
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from rlm_kernel.llm.budget import Budget, get_session_budget
from rlm_kernel.llm.events import CallEvent, bus
from rlm_kernel.llm.schema import BUDGET_DIMS
from rlm_kernel.llm.session import current_session
from rlm_kernel.output import own_type
from rlm_kernel.widgets.display_mode import resolve_mode
from rlm_kernel.widgets.lib import ipywidgets
from rlm_kernel.widgets.text import budget_line, format_duration, format_tokens, format_usd
from rlm_kernel.widgets.throttle import Coalescer, Scheduler

__all__ = [
    "DANGER_AT",
    "WARNING_AT",
    "BudgetDisplay",
    "BudgetMonitor",
    "BudgetView",
    "budget_mimebundle",
    "gauge_style",
    "get_monitor",
    "normalise_snapshot",
    "register_displays",
    "show_budget",
]

WARNING_AT = 0.8
DANGER_AT = 1.0

_FORMAT: dict[str, Callable[[float], str]] = {
    "count": lambda v: format_tokens(int(v)),
    "usd": format_usd,
    "seconds": format_duration,
    "depth": lambda v: str(int(v)),
}
_CAPPED = tuple((d.used, d.limit, d.gauge, _FORMAT[d.kind]) for d in BUDGET_DIMS)
# (used key, cap key, label, formatter) of every budget dimension, in the schema's order


def gauge_style(used: float, cap: float | None) -> str:
    """'' below 80 % of the cap, 'warning' from 80 %, 'danger' at or over the cap ('' when uncapped)."""
    if cap is None:
        return ""
    if cap <= 0:
        return "danger" if used > 0 else ""
    ratio = used / cap
    if ratio >= DANGER_AT:
        return "danger"
    if ratio >= WARNING_AT:
        return "warning"
    return ""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def normalise_snapshot(raw: Mapping[str, Any], current_depth: int | None = None) -> dict[str, Any]:
    """Flatten `Budget.snapshot()` into the keys the views read: used figures, `cache_hits`, `max_*` caps.

    `current_depth` (deepest call in flight, from events) replaces the budget's own depth when larger.
    """
    out: dict[str, Any] = {"label": str(raw.get("label") or "")}
    for key in ("calls", "input_tokens", "output_tokens", "usd", "failed", "elapsed_s"):
        out[key] = _number(raw.get(key)) or 0
    out["cache_hits"] = _number(raw.get("cached", raw.get("cache_hits"))) or 0
    depth = int(_number(raw.get("depth")) or 0)
    out["depth"] = max(depth, current_depth or 0)
    reserved = raw.get("reserved")
    out["in_flight"] = int(_number(reserved.get("calls")) or 0) if isinstance(reserved, Mapping) else 0
    limits = raw.get("limits")
    limits = limits if isinstance(limits, Mapping) else raw
    for _used, cap_key, _label, _fmt in _CAPPED:
        cap = _number(limits.get(cap_key))
        if cap is not None:
            out[cap_key] = cap
    return out


class BudgetView:
    """ipywidgets view of one budget: a row per figure (gauge when capped) and a line of counts."""

    def __init__(self, norm: Mapping[str, Any]) -> None:
        w = ipywidgets()
        label = norm.get("label") or "budget"
        self.title = w.HTML(f"<b>budget</b> <span style='opacity: 0.7'>({html.escape(str(label))})</span>")
        self.rows: dict[str, tuple[Any, Any, Any]] = {}  # (row box, gauge, value): ipywidgets
        for used_key, _cap, text, _fmt in _CAPPED:
            name = w.HTML(text, layout=w.Layout(width="8em"))
            gauge = w.FloatProgress(value=0.0, min=0.0, max=1.0, layout=w.Layout(width="12em"))
            gauge.add_class("rlm-budget-gauge")
            value = w.HTML("")
            value.add_class(f"rlm-budget-{used_key.replace('_', '-')}")
            self.rows[used_key] = (w.HBox([name, gauge, value]), gauge, value)
        self.counts = w.HTML("")
        self.counts.add_class("rlm-budget-counts")
        self.widget = w.VBox([self.title], layout=w.Layout(margin="2px 0"))
        self.widget.add_class("rlm-budget")
        self.update(norm)

    def update(self, norm: Mapping[str, Any]) -> None:
        shown: list[Any] = [self.title]
        for used_key, cap_key, _text, fmt in _CAPPED:
            row, gauge, value = self.rows[used_key]
            used = float(norm.get(used_key) or 0)
            cap = norm.get(cap_key)
            if used_key == "elapsed_s" and cap is None:
                continue  # wall time is only worth a row when it is capped
            gauge.layout.display = "" if cap is not None else "none"
            if cap is not None:
                gauge.max = max(float(cap), 1e-12)
                gauge.value = min(used, gauge.max)
                gauge.bar_style = gauge_style(used, cap)
                pct = f" ({used / cap:.0%})" if cap > 0 else ""
                value.value = f"<span class='rlm-budget-value'>{fmt(used)} of {fmt(cap)}{pct}</span>"
            else:
                value.value = f"<span class='rlm-budget-value'>{fmt(used)}</span>"
            shown.append(row)
        self.counts.value = (
            f"<span style='font-size: 0.85em'>{int(norm.get('cache_hits') or 0)} cache hits · "
            f"{int(norm.get('failed') or 0)} failed · {int(norm.get('in_flight') or 0)} in flight</span>"
        )
        shown.append(self.counts)
        if tuple(self.widget.children) != tuple(shown):
            self.widget.children = tuple(shown)


class BudgetMonitor:
    """Keeps one live `BudgetView` per budget and refreshes them (coalesced) whenever a call settles.

    Also tracks the deepest call in flight (events carry `depth`) to show the current recursion depth.
    """

    def __init__(
        self,
        subscribe: Callable[[Callable[[CallEvent], None]], Callable[[], None]] = bus.subscribe,
        scheduler: Scheduler | None = None,
    ) -> None:
        self._scheduler = scheduler
        self._lock = threading.Lock()
        self._views: weakref.WeakKeyDictionary[Any, tuple[BudgetView, Coalescer]] = (
            weakref.WeakKeyDictionary()
        )
        self._depths: dict[str, int] = {}
        self._unsubscribe = subscribe(self.handle)

    def current_depth(self) -> int:
        with self._lock:
            return max(self._depths.values(), default=0)

    def handle(self, event: CallEvent) -> None:
        if event.kind == "batch_end":
            # final figures before the cell that ran the batch finishes, not up to one interval later
            with self._lock:
                views = list(self._views.values())
            for _view, coalescer in views:
                coalescer.flush_now()
            return
        if event.kind == "batch_start":
            return
        with self._lock:
            if event.kind in ("start", "retry") and event.call_id:
                self._depths[event.call_id] = event.depth
            else:
                self._depths.pop(event.call_id, None)
            views = list(self._views.values())
        if event.kind in ("finish", "cached", "failed", "start"):
            for _view, coalescer in views:
                coalescer.mark()

    def norm(self, budget: Any) -> dict[str, Any]:
        return normalise_snapshot(budget.snapshot(), self.current_depth())

    def view_for(self, budget: Any) -> BudgetView:
        """The live view of `budget` (created on first request; the same one afterwards)."""
        with self._lock:
            entry = self._views.get(budget)
        if entry is not None:
            entry[1].flush_now()
            return entry[0]
        view = BudgetView(self.norm(budget))
        ref = weakref.ref(budget)

        def refresh() -> None:
            target = ref()
            if target is not None:
                view.update(self.norm(target))

        coalescer = Coalescer(refresh, scheduler=self._scheduler)
        with self._lock:
            entry = self._views.setdefault(budget, (view, coalescer))
        if entry[0] is not view:
            view.widget.close()
            return entry[0]
        closer = weakref.finalize(budget, view.widget.close)
        closer.atexit = False  # at shutdown the kernel's sockets are gone: closing the comm there only fails
        return view

    def close(self) -> None:
        self._unsubscribe()


def get_monitor() -> BudgetMonitor:
    """The session's budget monitor (subscribed to its event bus on first use; `LLMSession.slot`)."""
    return current_session().slot("widgets.budget_monitor", BudgetMonitor)


def budget_mimebundle(budget: Any = None, mode: str | None = None) -> dict[str, Any]:
    """What displaying a budget shows: always a text/plain budget line, plus the live widget in widgets mode.

    `budget` defaults to the session budget; `mode` to the resolved display mode.
    """
    if budget is None:
        budget = get_session_budget()
    if mode is None:
        mode = resolve_mode()[0]
    monitor = get_monitor()
    bundle: dict[str, Any] = {"text/plain": budget_line(monitor.norm(budget))}
    if mode == "widgets":
        view = monitor.view_for(budget)
        widget_bundle = view.widget._repr_mimebundle_() or {}
        view_json = widget_bundle.get("application/vnd.jupyter.widget-view+json")
        if view_json:
            bundle["application/vnd.jupyter.widget-view+json"] = view_json
    return bundle


def show_budget(budget: Budget) -> dict[str, Any]:
    """How a notebook shows a `Budget` object: its text line, plus the live widget in widgets mode (with an
    invalid `display` setting, which `%rlm display` explains, the text line alone)."""
    try:
        return budget_mimebundle(budget)
    except ValueError:
        return budget_mimebundle(budget, "text")


def register_displays(shell: Any) -> None:
    """Teach `shell`'s display formatter to show budgets (the LLM layer knows nothing of widgets)."""
    shell.display_formatter.mimebundle_formatter.for_type(Budget, show_budget)
    own_type(Budget)  # shown as the kernel's budget widget (a view of the kernel's own figures)


@own_type
class BudgetDisplay:
    """What `%rlm budget` returns: displays as the live budget widget (widgets mode) or its text line."""

    def __init__(self, budget: Any = None, mode: str | None = None) -> None:
        self._budget = budget
        self._mode = mode

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return budget_mimebundle(self._budget, self._mode)

    def __repr__(self) -> str:
        return str(budget_mimebundle(self._budget, "text")["text/plain"])
