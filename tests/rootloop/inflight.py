"""Model calls in flight over time, as the test server saw them: a gate that holds chosen calls until enough
are in flight together, and the largest overlap of recorded calls (their arrival and end times).

A client that sends the calls one after another never fills the gate: each held call is released after
`timeout` seconds, and the overlap the server recorded shows it, however slow or busy the machine is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from tests.llm_server import RecordedRequest

__all__ = ["Gate", "max_overlap"]


class Gate:
    """A `reply_with` function: requests `matches` picks are held until `count` of them are in flight at once
    (then the gate stays open); every request is answered by `reply(rec)`."""

    def __init__(
        self,
        count: int,
        matches: Callable[[RecordedRequest], bool],
        reply: Callable[[RecordedRequest], object],
        timeout: float = 30.0,
    ) -> None:
        self.count, self.matches, self.reply, self.timeout = count, matches, reply, timeout
        self.held = 0
        self.most = 0  # the most held calls at one time
        self.opened = False
        self._event: asyncio.Event | None = None

    async def __call__(self, rec: RecordedRequest) -> object:
        if self.matches(rec) and not self.opened:
            if self._event is None:
                self._event = asyncio.Event()  # made on the server's loop
            self.held += 1
            self.most = max(self.most, self.held)
            if self.held >= self.count:
                self.opened = True
                self._event.set()
            try:
                await asyncio.wait_for(self._event.wait(), self.timeout)
            except TimeoutError:
                pass
            finally:
                self.held -= 1
        return self.reply(rec)


def max_overlap(requests: Iterable[RecordedRequest]) -> int:
    """The most of `requests` the server was handling at one time (from their arrival and end times)."""
    edges: list[tuple[float, int]] = []
    for rec in requests:
        assert rec.ended is not None, f"still in flight: {rec.prompt[:80]!r}"
        edges += [(rec.time, 1), (rec.ended, -1)]
    most = now = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):  # an end before a start at the same instant
        now += step
        most = max(most, now)
    return most
