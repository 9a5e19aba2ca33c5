"""Text fallback: the deterministic one-line summary, live lines, budget line, the shipped sanitize file."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import rlm_kernel.widgets.text as text
from rlm_kernel.llm.events import CallEvent
from rlm_kernel.widgets.state import FanoutTracker
from tests.widgets.events import FakeClock, batch_events, call_events


def run_batch(clock: FakeClock, seconds: float, **kwargs) -> str:
    t = FanoutTracker(clock=clock)
    events = list(batch_events("b", 200, **kwargs))
    for e in events[:-1]:
        t.handle(e)
    clock.tick(seconds)
    t.handle(events[-1])
    snap = t.snapshot("b")
    assert snap is not None
    return text.fanout_summary(snap)


def test_summary_exact_text() -> None:
    line = run_batch(
        FakeClock(), 1.234, cached=frozenset({1, 2, 3}), input_tokens=62, output_tokens=15, cost_usd=0.0
    )
    assert line == (
        "fan-out: 200/200 done · 0 failed · 3 cached · 12,214 in / 2,955 out tokens · $0.0000 · took 1.2 s"
    )


def test_summary_is_deterministic_up_to_the_sanitised_timing() -> None:
    a = run_batch(FakeClock(), 0.5, failed=frozenset({7}))
    b = run_batch(FakeClock(1000.0), 73.25, failed=frozenset({7}))
    assert a != b
    cfg = configparser.ConfigParser()
    path = Path(text.__file__).with_name(text.SANITIZE_CFG)
    cfg.read(path)
    for section in cfg.sections():  # apply it the way nbval does
        a = re.sub(cfg[section]["regex"], cfg[section]["replace"], a)
        b = re.sub(cfg[section]["regex"], cfg[section]["replace"], b)
    assert a == b
    assert "199/200 done · 1 failed" in a


def test_summary_without_timing_retries_nested_and_stopped() -> None:
    clock = FakeClock()
    t = FanoutTracker(clock=clock)
    t.handle(CallEvent(kind="batch_start", batch_id="r", total=4, extra={"label": "chapters"}))
    for e in call_events("r", 0, retries=2, cost_usd=0.25):
        t.handle(e)
    for e in batch_events("k", 2, parent_batch_id="r"):
        t.handle(e)
    t.handle(CallEvent(kind="batch_end", batch_id="r"))
    snap = t.snapshot("r")
    assert snap is not None
    assert text.fanout_summary(snap, timing=False) == (
        "fan-out (chapters): 1/4 done · 0 failed · 0 cached · 2 retried · 1 nested fan-out"
        " · 30 in / 9 out tokens · $0.2500 · stopped with 3 not run"
    )


def test_budget_line_with_and_without_caps() -> None:
    snap = {
        "calls": 12,
        "input_tokens": 1234,
        "output_tokens": 56,
        "usd": 0.0123,
        "cache_hits": 3,
        "depth": 1,
        "max_calls": 100,
        "max_usd": 1.0,
        "max_depth": 3,
    }
    assert text.budget_line(snap) == (
        "budget: 12 of 100 calls · 1,234 in tokens · 56 out tokens · $0.0123 of $1.0000 · 3 cache hits"
        " · depth 1 of 3"
    )
    assert text.budget_line({}) == (
        "budget: 0 calls · 0 in tokens · 0 out tokens · $0.0000 · 0 cache hits · depth 0"
    )


def test_summary_of_an_interrupted_batch() -> None:
    t = FanoutTracker(clock=FakeClock())
    t.handle(CallEvent(kind="batch_start", batch_id="b", total=10))
    for e in call_events("b", 0):
        t.handle(e)
    for i in (1, 2):
        t.handle(CallEvent(kind="start", batch_id="b", call_id=f"c{i}"))
        t.handle(CallEvent(kind="failed", batch_id="b", call_id=f"c{i}", error="cancelled"))
    t.handle(CallEvent(kind="batch_end", batch_id="b"))
    snap = t.snapshot("b")
    assert snap is not None
    assert text.fanout_summary(snap, timing=False) == (
        "fan-out: 1/10 done · 0 failed · 0 cached · 2 cancelled · 10 in / 3 out tokens · $0.0000"
        " · stopped with 7 not run"
    )
