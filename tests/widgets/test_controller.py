"""FanoutController with a recording sink: what is shown where, coalesced updates, final summary, modes."""

from __future__ import annotations

from typing import Any

import pytest

from rlm_kernel.llm.events import CallEvent
from rlm_kernel.widgets.controller import FanoutController
from rlm_kernel.widgets.fanout import FanoutView
from rlm_kernel.widgets.state import FanoutTracker
from tests.widgets.events import batch_events, call_events
from tests.widgets.manual_scheduler import ManualScheduler


class RecordingSink:
    def __init__(self) -> None:
        self.shown: list[tuple[Any, Any]] = []
        self.written: list[tuple[str, Any]] = []
        self.fallbacks: list[str] = []
        self.finished: list[tuple[str, Any, Any]] = []

    def parent_for(self, owner: str | None) -> Any:
        return {"cell": owner}

    def show(self, widget: Any, parent: Any, fallback: str = "") -> Any:
        self.shown.append((widget, parent))
        self.fallbacks.append(fallback)
        return len(self.shown)

    def finish(self, widget: Any, parent: Any, handle: Any, summary: str) -> None:
        self.finished.append((summary, parent, handle))

    def write(self, text: str, parent: Any) -> None:
        self.written.append((text, parent))


def make(mode: str, sched: ManualScheduler | None = None) -> tuple[FanoutController, RecordingSink]:
    sink = RecordingSink()
    sched = sched if sched is not None else ManualScheduler()
    ctl = FanoutController(
        sink, mode=lambda: mode, tracker=FanoutTracker(clock=sched.clock), scheduler=sched, timing=False
    )
    return ctl, sink


def test_widgets_mode_shows_in_owner_cell_and_puts_the_summary_in_the_display() -> None:
    ctl, sink = make("widgets")
    for e in batch_events("b", 5, owner="cell-7", cached=frozenset({0})):
        ctl.handle(e)
    assert len(sink.shown) == 1
    widget, parent = sink.shown[0]
    assert parent == {"cell": "cell-7"}
    assert sink.fallbacks == ["[fan-out widget: 5 calls]"]
    assert "rlm-fanout" in widget._dom_classes
    # the summary becomes the widget display's text form, never a second line under the widget
    assert sink.written == []
    assert sink.finished == [
        ("fan-out: 5/5 done · 0 failed · 1 cached · 40 in / 12 out tokens · $0.0000", {"cell": "cell-7"}, 1)
    ]
    assert not ctl._live and len(ctl.tracker) == 0


def test_final_state_reaches_the_widget() -> None:
    ctl, sink = make("widgets")
    events = list(batch_events("b", 200))
    for e in events:
        ctl.handle(e)  # the scheduler never ran: only the final flush updated the view
    widget = sink.shown[0][0]
    bar = widget.children[0].children[1]
    count = widget.children[0].children[2]
    assert (bar.value, bar.max, bar.bar_style) == (200, 200, "success")
    assert "200/200" in count.value
    assert "200 done · 0 in flight · 0 failed" in widget.children[1].value


def test_updates_are_coalesced_to_the_interval() -> None:
    sched = ManualScheduler()
    ctl, sink = make("widgets", sched)
    updates: list[float] = []
    original = FanoutView.update

    def counting(self: FanoutView, snap: Any) -> None:
        updates.append(sched.now)
        original(self, snap)

    FanoutView.update = counting  # type: ignore[method-assign]
    try:
        ctl.handle(CallEvent(kind="batch_start", batch_id="b", total=10_000, owner="c"))
        for i in range(10_000):  # 10,000 calls finishing over 5 simulated seconds
            sched.advance(i * 0.0005)
            for e in call_events("b", i):
                ctl.handle(e)
        ctl.handle(CallEvent(kind="batch_end", batch_id="b", owner="c"))
        sched.advance(10)
    finally:
        FanoutView.update = original  # type: ignore[method-assign]
    # 1 at construction + ≤ 10/s over 5 s + the final flush
    assert len(updates) <= 1 + 51 + 1
    assert len(updates) >= 40  # and it did update live
    widget = sink.shown[0][0]
    assert widget.children[0].children[1].value == 10_000


def test_nested_fanouts_render_under_their_root_only() -> None:
    ctl, sink = make("widgets")
    ctl.handle(CallEvent(kind="batch_start", batch_id="root", total=2, owner="c"))
    for k in range(12):
        for e in batch_events(f"kid{k}", 3, parent_batch_id="root", owner="worker-thread"):
            ctl.handle(e)
    for i in range(2):
        for e in call_events("root", i):
            ctl.handle(e)
    ctl.handle(CallEvent(kind="batch_end", batch_id="root", owner="c"))
    assert len(sink.shown) == 1  # nested fan-outs never open their own widget
    assert sink.written == [] and len(sink.finished) == 1
    assert "12 nested fan-outs" in sink.finished[0][0]
    assert "380 in / 114 out tokens" in sink.finished[0][0]  # 2 + 36 calls × (10 in, 3 out)
    root = sink.shown[0][0]
    nested_box = root.children[2]
    assert len(nested_box.children) == 11  # 10 nested views + "… and 2 more"
    assert "2 more nested fan-outs" in nested_box.children[-1].value
    assert "rlm-fanout-nested" in nested_box.children[0]._dom_classes


def test_text_mode_writes_only_the_summary() -> None:
    ctl, sink = make("text")
    for e in batch_events("b", 3, failed=frozenset({1})):
        ctl.handle(e)
    assert sink.shown == []
    assert [t for t, _ in sink.written] == [
        "fan-out: 2/3 done · 1 failed · 0 cached · 20 in / 6 out tokens · $0.0000"
    ]


def test_off_mode_is_silent_and_forgets() -> None:
    ctl, sink = make("off")
    for e in batch_events("b", 3):
        ctl.handle(e)
    assert sink.shown == [] and sink.written == []
    assert len(ctl.tracker) == 0


def test_invalid_mode_falls_back_to_text_with_a_note() -> None:
    sink = RecordingSink()

    def bad() -> str:
        raise ValueError("environment variable RLM_DISPLAY: display must be one of auto, off, text, widgets")

    ctl = FanoutController(sink, mode=bad, scheduler=ManualScheduler(), timing=False)
    for e in batch_events("b", 1):
        ctl.handle(e)
    assert "RLM_DISPLAY" in sink.written[0][0]
    assert sink.written[1][0].startswith("fan-out: 1/1 done")


def test_two_concurrent_roots_go_to_their_own_cells() -> None:
    ctl, sink = make("widgets")
    a = list(batch_events("a", 4, owner="cell-a"))
    b = list(batch_events("b", 2, owner="cell-b"))
    for i in range(max(len(a), len(b))):
        for seq in (a, b):
            if i < len(seq):
                ctl.handle(seq[i])
    assert [p for _, p in sink.shown] == [{"cell": "cell-a"}, {"cell": "cell-b"}]
    assert sorted((t.split(" · ")[0], p["cell"]) for t, p, _ in sink.finished) == [
        ("fan-out: 2/2 done", "cell-b"),
        ("fan-out: 4/4 done", "cell-a"),
    ]


@pytest.mark.parametrize("mode", ["widgets", "text"])
def test_summary_written_even_when_batch_has_zero_items(mode: str) -> None:
    ctl, sink = make(mode)
    for e in batch_events("empty", 0):
        ctl.handle(e)
    summaries = [t for t, *_ in sink.written + sink.finished]
    assert summaries == ["fan-out: 0/0 done · 0 failed · 0 cached · 0 in / 0 out tokens · $0.0000"]


def test_live_view_keeps_ticking_while_calls_are_slow() -> None:
    sched = ManualScheduler()
    ctl, sink = make("widgets", sched)
    ctl.handle(CallEvent(kind="batch_start", batch_id="b", total=2, owner="c"))
    ctl.handle(CallEvent(kind="start", batch_id="b", call_id="slow"))
    sched.advance(0.2)
    stats = sink.shown[0][0].children[1]
    assert "0.2 s" in stats.value or "0.0 s" in stats.value
    sched.advance(3.05)  # no events for 3 s: the elapsed time still moves
    assert "3.0 s" in stats.value
    for e in call_events("b", 0) + call_events("b", 1):
        ctl.handle(e)
    ctl.handle(CallEvent(kind="batch_end", batch_id="b"))
    sched.advance(10)
    assert sched.pending == 0  # ticking stops with the batch
