"""A scheduler for tests: nothing runs until the test advances its clock (widgets' `Scheduler` protocol)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

__all__ = ["ManualScheduler"]


class ManualScheduler:
    """A scheduler for tests: nothing runs until `advance(to)` runs every callback due by then, in order."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()

    def clock(self) -> float:
        return self.now

    def call_at(self, due: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (due, next(self._seq), fn))

    def advance(self, to: float) -> None:
        while self._heap and self._heap[0][0] <= to:
            due, _, fn = heapq.heappop(self._heap)
            self.now = max(self.now, due)
            fn()
        self.now = max(self.now, to)

    @property
    def pending(self) -> int:
        return len(self._heap)
