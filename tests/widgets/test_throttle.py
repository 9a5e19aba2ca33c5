"""Coalescer: many marks from many threads → at most one flush per interval, final state always flushed."""

from __future__ import annotations

import threading
import time

from rlm_kernel.widgets.throttle import Coalescer, FlushScheduler
from tests.widgets.manual_scheduler import ManualScheduler


def test_manual_schedule_coalesces_10k_marks_over_2s_into_at_most_21_flushes() -> None:
    sched = ManualScheduler()
    seen: list[float] = []
    c = Coalescer(lambda: seen.append(sched.now), interval=0.1, scheduler=sched)
    for i in range(10_000):  # 10,000 events spread over 2 simulated seconds
        sched.advance(i * 0.0002)
        c.mark()
    sched.advance(5.0)
    assert 1 <= len(seen) <= 21
    gaps = [b - a for a, b in zip(seen, seen[1:], strict=False)]
    assert all(g >= 0.1 - 1e-9 for g in gaps)
    # nothing left pending once the last change has been flushed
    assert sched.pending == 0


def test_first_mark_flushes_immediately_then_waits_interval() -> None:
    sched = ManualScheduler()
    calls: list[float] = []
    c = Coalescer(lambda: calls.append(sched.now), interval=0.1, scheduler=sched)
    c.mark()
    sched.advance(0.0)
    assert calls == [0.0]
    c.mark()
    c.mark()
    sched.advance(0.05)
    assert calls == [0.0]
    sched.advance(0.1)
    assert calls == [0.0, 0.1]


def test_flush_now_supersedes_pending_and_close_stops() -> None:
    sched = ManualScheduler()
    calls: list[str] = []
    c = Coalescer(lambda: calls.append("f"), interval=0.1, scheduler=sched)
    c.mark()
    sched.advance(0)
    c.mark()  # pending at 0.1
    c.flush_now()
    assert calls == ["f", "f"]
    sched.advance(1)  # the pending one finds nothing new
    assert calls == ["f", "f"]
    c.close()
    c.mark()
    sched.advance(2)
    assert calls == ["f", "f", "f"]  # close() flushed once; marks after close are ignored


def test_real_threads_rate_limited_and_final_state_seen() -> None:
    sched = FlushScheduler()
    counter = {"n": 0}
    seen: list[int] = []
    lock = threading.Lock()
    c = Coalescer(lambda: seen.append(counter["n"]), interval=0.1, scheduler=sched)

    def worker() -> None:
        for _ in range(2500):
            with lock:
                counter["n"] += 1
            c.mark()
            time.sleep(0.0001)

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    c.flush_now()
    elapsed = time.monotonic() - t0
    assert seen[-1] == 10_000
    assert len(seen) <= elapsed * 10 + 3, (len(seen), elapsed)


def test_flushes_never_overlap() -> None:
    sched = FlushScheduler()
    active = {"n": 0, "max": 0}
    guard = threading.Lock()

    def slow_flush() -> None:
        with guard:
            active["n"] += 1
            active["max"] = max(active["max"], active["n"])
        time.sleep(0.01)
        with guard:
            active["n"] -= 1

    c = Coalescer(slow_flush, interval=0.0, scheduler=sched)
    threads = [
        threading.Thread(target=lambda: [c.flush_now() or c.mark() for _ in range(20)]) for _ in range(3)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    time.sleep(0.1)
    assert active["max"] == 1


def test_a_failing_flush_does_not_kill_the_scheduler() -> None:
    sched = FlushScheduler()
    ok = threading.Event()

    def boom() -> None:
        raise RuntimeError("view broke")

    Coalescer(boom, scheduler=sched).mark()
    Coalescer(ok.set, scheduler=sched).mark()
    assert ok.wait(2)
