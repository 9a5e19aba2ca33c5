"""FanoutTracker: events in, snapshot out — counts, nesting, rate/ETA, duplicates, missed batch_start."""

from __future__ import annotations

import pytest

from rlm_kernel.llm.events import CallEvent
from rlm_kernel.widgets.state import RATE_WINDOW_S, FanoutTracker
from tests.widgets.events import FakeClock, batch_events, call_events


def feed(tracker: FanoutTracker, events) -> None:
    for e in events:
        tracker.handle(e)


def test_full_batch_counts() -> None:
    clock = FakeClock()
    t = FanoutTracker(clock=clock)
    feed(
        t,
        batch_events(
            "b1",
            10,
            failed=frozenset({3}),
            cached=frozenset({5, 6}),
            input_tokens=7,
            output_tokens=2,
            cost_usd=0.001,
        ),
    )
    s = t.snapshot("b1")
    assert s is not None
    assert (s.total, s.done, s.failed, s.cached, s.in_flight) == (10, 9, 1, 2, 0)
    assert s.completed == 10 and s.finished
    # tokens and cost count only calls that reached the provider (7 finished, not cached, not failed)
    assert (s.input_tokens, s.output_tokens) == (49, 14)
    assert s.cost_usd == pytest.approx(0.007)
    assert s.errors == ("HTTP 500 from provider",)
    assert s.eta_s == 0.0


def test_in_flight_and_retries_while_running() -> None:
    t = FanoutTracker(clock=FakeClock())
    t.handle(CallEvent(kind="batch_start", batch_id="b", total=5))
    for i in range(4):
        t.handle(CallEvent(kind="start", batch_id="b", call_id=f"c{i}", index=i))
    t.handle(CallEvent(kind="retry", batch_id="b", call_id="c0", attempt=1))
    t.handle(CallEvent(kind="retry", batch_id="b", call_id="c0", attempt=2))
    t.handle(CallEvent(kind="finish", batch_id="b", call_id="c1", input_tokens=5, output_tokens=1))
    s = t.snapshot("b")
    assert s is not None
    assert (s.done, s.in_flight, s.retried, s.failed, s.finished) == (1, 3, 2, 0, False)


def test_duplicate_terminal_events_count_once_and_late_start_is_ignored() -> None:
    t = FanoutTracker(clock=FakeClock())
    t.handle(CallEvent(kind="batch_start", batch_id="b", total=2))
    fin = CallEvent(kind="finish", batch_id="b", call_id="x", input_tokens=4)
    t.handle(CallEvent(kind="start", batch_id="b", call_id="x"))
    t.handle(fin)
    t.handle(fin)
    t.handle(CallEvent(kind="start", batch_id="b", call_id="x"))  # out-of-order start after finish
    s = t.snapshot("b")
    assert s is not None
    assert (s.done, s.in_flight, s.input_tokens) == (1, 0, 4)


def test_events_without_batch_are_ignored() -> None:
    t = FanoutTracker()
    assert t.handle(CallEvent(kind="finish", call_id="solo", input_tokens=3)) is None
    assert len(t) == 0


def test_missed_batch_start_still_counts() -> None:
    t = FanoutTracker(clock=FakeClock())
    feed(t, call_events("late", 0) + call_events("late", 1))
    s = t.snapshot("late")
    assert s is not None
    assert (s.done, s.total) == (2, 2)


def test_nesting_rolls_tokens_up_and_root_of() -> None:
    t = FanoutTracker(clock=FakeClock())
    t.handle(CallEvent(kind="batch_start", batch_id="root", total=2))
    feed(t, batch_events("kid-a", 3, parent_batch_id="root", input_tokens=10, output_tokens=1))
    feed(t, batch_events("grandkid", 2, parent_batch_id="kid-a", input_tokens=100, output_tokens=10))
    feed(t, call_events("root", 0, input_tokens=1, output_tokens=1))
    s = t.snapshot("root")
    assert s is not None
    assert [c.batch_id for c in s.children] == ["kid-a"]
    assert [c.batch_id for c in s.children[0].children] == ["grandkid"]
    assert s.nested_count == 2
    assert s.input_tokens == 1 + 30 + 200
    assert s.children[0].input_tokens == 30 + 200
    assert t.root_of("grandkid") == "root"
    assert t.root_of("nope") is None
    t.forget("root")
    assert len(t) == 0


def test_unknown_parent_makes_a_root() -> None:
    t = FanoutTracker()
    t.handle(CallEvent(kind="batch_start", batch_id="orphan", parent_batch_id="gone", total=1))
    assert t.root_of("orphan") == "orphan"


def test_rate_and_eta_overall_then_windowed() -> None:
    clock = FakeClock()
    t = FanoutTracker(clock=clock)
    t.handle(CallEvent(kind="batch_start", batch_id="b", total=100))
    for i in range(20):  # 20 items in 2 s → 10/s
        clock.tick(0.1)
        feed(t, call_events("b", i))
    s = t.snapshot("b")
    assert s is not None
    assert s.rate_per_s == pytest.approx(10.0)
    assert s.eta_s == pytest.approx(8.0)
    # then it slows to 1 item/s for longer than the window: the rate follows the recent pace
    for i in range(20, 30):
        clock.tick(1.0)
        feed(t, call_events("b", i))
    s = t.snapshot("b")
    assert s is not None
    assert s.elapsed_s > RATE_WINDOW_S
    assert s.rate_per_s == pytest.approx(1.0, abs=0.21)
    assert s.eta_s == pytest.approx(70 / s.rate_per_s)


def test_no_rate_before_first_completion() -> None:
    clock = FakeClock()
    t = FanoutTracker(clock=clock)
    t.handle(CallEvent(kind="batch_start", batch_id="b", total=3))
    clock.tick(1)
    s = t.snapshot("b")
    assert s is not None
    assert s.rate_per_s is None and s.eta_s is None and s.elapsed_s == pytest.approx(1)


def test_elapsed_freezes_at_batch_end() -> None:
    clock = FakeClock()
    t = FanoutTracker(clock=clock)
    t.handle(CallEvent(kind="batch_start", batch_id="b", total=1))
    clock.tick(2)
    feed(t, call_events("b", 0))
    t.handle(CallEvent(kind="batch_end", batch_id="b"))
    clock.tick(50)
    s = t.snapshot("b")
    assert s is not None
    assert s.elapsed_s == pytest.approx(2)


def test_eviction_keeps_running_batches() -> None:
    t = FanoutTracker(max_batches=10)
    for i in range(9):
        feed(t, batch_events(f"done{i}", 1))
    t.handle(CallEvent(kind="batch_start", batch_id="running", total=5))
    t.handle(CallEvent(kind="batch_start", batch_id="another", total=5))
    assert t.get("running") is not None and t.get("another") is not None
    assert len(t) <= 10


def test_concurrent_feeding_is_consistent() -> None:
    import threading

    t = FanoutTracker()
    t.handle(CallEvent(kind="batch_start", batch_id="b", total=4000))

    def worker(k: int) -> None:
        for i in range(k * 1000, (k + 1) * 1000):
            feed(t, call_events("b", i))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    s = t.snapshot("b")
    assert s is not None
    assert (s.done, s.in_flight, s.input_tokens) == (4000, 0, 40_000)


def test_cancelled_calls_are_counted_apart_from_failures() -> None:
    t = FanoutTracker(clock=FakeClock())
    t.handle(CallEvent(kind="batch_start", batch_id="b", total=10))
    feed(t, call_events("b", 0))
    t.handle(CallEvent(kind="start", batch_id="b", call_id="b:1"))
    t.handle(CallEvent(kind="failed", batch_id="b", call_id="b:1", error="cancelled"))
    t.handle(CallEvent(kind="batch_end", batch_id="b"))
    s = t.snapshot("b")
    assert s is not None
    assert (s.done, s.failed, s.cancelled, s.completed, s.errors) == (1, 0, 1, 2, ())


def test_labels_are_one_short_line() -> None:
    t = FanoutTracker()
    long = "map_reduce:\n  " + "x" * 200
    t.handle(CallEvent(kind="batch_start", batch_id="b", total=1, extra={"label": long}))
    s = t.snapshot("b")
    assert s is not None and s.label is not None
    assert len(s.label) == 60 and s.label.startswith("map_reduce: xxx") and s.label.endswith("…")
