"""The fan-out widget: a progress bar with counts, rate, ETA and cost, with nested fan-outs indented below it.

`FanoutView.update(snapshot)` sets only traits whose value changed, so a coalesced flush sends little.
"""

from __future__ import annotations

import html

from rlm_kernel.widgets.lib import ipywidgets
from rlm_kernel.widgets.state import FanoutSnapshot
from rlm_kernel.widgets.text import format_duration, format_tokens, format_usd

__all__ = ["MAX_NESTED_SHOWN", "FanoutView", "bar_style"]

MAX_NESTED_SHOWN = 10
"""Nested fan-outs shown per level; the rest are summarised in one line."""


def bar_style(snap: FanoutSnapshot) -> str:
    """'' while running, 'success' when all done, 'warning' with some failures, 'danger' if none succeeded."""
    if not snap.finished:
        return "warning" if snap.failed else "info"
    if snap.failed and snap.done == 0:
        return "danger"
    if snap.failed or snap.cancelled or snap.completed < snap.total:
        return "warning"
    return "success"


def _stats_html(snap: FanoutSnapshot) -> str:
    parts = [f"{snap.done} done", f"{snap.in_flight} in flight", f"{snap.failed} failed"]
    parts += [f"{snap.retried} retried", f"{snap.cached} cached"]
    if snap.cancelled:
        parts.append(f"{snap.cancelled} cancelled")
    parts.append(format_duration(snap.elapsed_s))
    if snap.rate_per_s is not None:
        parts.append(f"{snap.rate_per_s:,.1f}/s")
    if not snap.finished:
        parts.append("ETA " + (format_duration(snap.eta_s) if snap.eta_s is not None else "–"))
    parts.append(f"{format_tokens(snap.input_tokens)} in / {format_tokens(snap.output_tokens)} out tokens")
    parts.append(format_usd(snap.cost_usd))
    text = " · ".join(parts)
    if snap.errors:
        text += (
            "<br><span class='rlm-fanout-error'>last error: " + html.escape(snap.errors[-1][:200]) + "</span>"
        )
    return f"<span class='rlm-fanout-stats' style='font-size: 0.85em; opacity: 0.85'>{text}</span>"


class FanoutView:
    """ipywidgets view of one fan-out. `widget` is the box to display; call `update` with fresh snapshots."""

    def __init__(self, snap: FanoutSnapshot, nested_level: int = 0) -> None:
        self.batch_id = snap.batch_id
        self.nested_level = nested_level
        w = ipywidgets()
        title = "fan-out" if nested_level == 0 else "nested fan-out"
        if snap.label:
            title += f" ({snap.label})"
        self.title = w.HTML(f"<b>{html.escape(title)}</b>", layout=w.Layout(min_width="9em"))
        self.title.add_class("rlm-fanout-title")
        self.bar = w.IntProgress(value=0, min=0, max=max(1, snap.total), layout=w.Layout(width="40%"))
        self.bar.add_class("rlm-fanout-bar")
        self.count = w.HTML("")
        self.stats = w.HTML("")
        self.nested_box = w.VBox([], layout=w.Layout(margin="0 0 0 1.5em"))
        self.more = w.HTML("")
        self._nested: dict[str, FanoutView] = {}
        self.widget = w.VBox(
            [w.HBox([self.title, self.bar, self.count]), self.stats, self.nested_box],
            layout=w.Layout(margin="2px 0"),
        )
        self.widget.add_class("rlm-fanout" if nested_level == 0 else "rlm-fanout-nested")
        self.update(snap)

    def update(self, snap: FanoutSnapshot) -> None:
        total = max(1, snap.total)
        if self.bar.max != total:
            self.bar.max = total
        self.bar.value = min(snap.completed, total)
        self.bar.bar_style = bar_style(snap)
        self.count.value = f"<span class='rlm-fanout-count'>{snap.completed}/{snap.total}</span>"
        self.stats.value = _stats_html(snap)
        self._update_nested(snap)

    def _update_nested(self, snap: FanoutSnapshot) -> None:
        shown = snap.children[:MAX_NESTED_SHOWN]
        for child in shown:
            view = self._nested.get(child.batch_id)
            if view is None:
                view = self._nested[child.batch_id] = FanoutView(child, self.nested_level + 1)
            else:
                view.update(child)
        hidden = snap.children[MAX_NESTED_SHOWN:]
        if hidden:
            done = sum(c.completed for c in hidden)
            total = sum(c.total for c in hidden)
            self.more.value = (
                f"<span style='font-size: 0.85em'>… and {len(hidden)} more nested fan-outs "
                f"({done}/{total} items)</span>"
            )
        children = tuple(self._nested[c.batch_id].widget for c in shown) + ((self.more,) if hidden else ())
        if tuple(self.nested_box.children) != children:
            self.nested_box.children = children
