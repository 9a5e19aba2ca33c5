"""Coalescing of view updates: many `mark()`s from any thread become at most one flush per interval.

One daemon `FlushScheduler` thread runs the due flushes, so event emitters (LLM layer threads) never block.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Coalescer", "FlushScheduler", "Scheduler", "DEFAULT_INTERVAL_S", "default_scheduler"]

DEFAULT_INTERVAL_S = 0.1
"""At most 10 flushes per second per view."""


class FlushScheduler:
    """Runs callbacks at (monotonic) due times on one daemon thread, started on first use."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, name: str = "rlm-widget-flush") -> None:
        self.clock = clock
        self._name = name
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def call_at(self, due: float, fn: Callable[[], None]) -> None:
        with self._cond:
            heapq.heappush(self._heap, (due, next(self._seq), fn))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                due, _, fn = self._heap[0]
                delay = due - self.clock()
                if delay > 0:
                    self._cond.wait(timeout=delay)
                    continue
                heapq.heappop(self._heap)
            try:
                fn()
            except Exception:  # noqa: BLE001 - a broken view must not stop other views' updates
                pass


class Scheduler(Protocol):
    """What a `Coalescer` needs of a scheduler: `clock`, `call_at` (FlushScheduler; tests have their own)."""

    def clock(self) -> float: ...

    def call_at(self, due: float, fn: Callable[[], None]) -> None: ...


_default: FlushScheduler | None = None
_default_lock = threading.Lock()


def default_scheduler() -> FlushScheduler:
    """The process-wide scheduler shared by every live view."""
    global _default
    with _default_lock:
        if _default is None:
            _default = FlushScheduler()
        return _default


class Coalescer:
    """Calls `flush()` at most once per `interval` however often `mark()` is called, and never concurrently.

    `mark()` is cheap and thread-safe: it records that something changed and, if no flush is pending,
    schedules one for `max(now, last_flush + interval)`. `flush_now()` flushes at once on the calling
    thread (used for the final state); a pending flush then finds nothing new and does nothing.
    """

    def __init__(
        self,
        flush: Callable[[], None],
        interval: float = DEFAULT_INTERVAL_S,
        scheduler: Scheduler | None = None,
    ) -> None:
        self._flush = flush
        self.interval = interval
        self._scheduler = scheduler if scheduler is not None else default_scheduler()
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._dirty = False
        self._scheduled = False
        self._closed = False
        self._last = float("-inf")
        self.flushes = 0

    def mark(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._dirty = True
            if self._scheduled:
                return
            self._scheduled = True
            due = max(self._scheduler.clock(), self._last + self.interval)
        self._scheduler.call_at(due, self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        with self._lock:
            self._scheduled = False
            if not self._dirty or self._closed:
                return
        self._run()

    def flush_now(self) -> None:
        """Flush on this thread right away (serialised with any scheduled flush)."""
        with self._lock:
            self._dirty = True
        self._run()

    def _run(self) -> None:
        with self._flush_lock:
            with self._lock:
                if not self._dirty:
                    return
                self._dirty = False
                self._last = self._scheduler.clock()
            self.flushes += 1
            self._flush()

    def close(self, final_flush: bool = True) -> None:
        """Flush once more (if asked) and stop accepting marks."""
        if final_flush:
            self.flush_now()
        with self._lock:
            self._closed = True
            self._dirty = False
