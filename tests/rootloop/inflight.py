"""Model calls in flight over time, as the test server saw them: a gate that holds chosen calls until calls
of enough different makers (sub-RLMs) are in flight together, and the largest overlap of recorded calls
(their arrival and end times).

A client that sends the calls one after another never fills the gate: each held call is released after
`timeout` seconds, and `most` (and the overlap the server recorded) shows it, however slow or busy the
machine is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from tests.llm_server import RecordedRequest

__all__ = ["Gate", "max_overlap"]


class Gate:
    """A `reply_with` function: a request `key(rec)` names (e.g. which sub-RLM made it) is held until requests
    of `count` different keys are held at once (then the gate stays open); `reply(rec)` answers them all.
    `most` is the most different keys ever held at once."""

    def __init__(
        self,
        count: int,
        key: Callable[[RecordedRequest], str | None],
        reply: Callable[[RecordedRequest], object],
        timeout: float = 20.0,
    ) -> None:
        self.count, self.key, self.reply, self.timeout = count, key, reply, timeout
        self.held: dict[str, int] = {}
        self.most = 0
        self.opened = False
        self._event: asyncio.Event | None = None

    async def __call__(self, rec: RecordedRequest) -> object:
        key = self.key(rec)
        if key is not None and not self.opened:
            if self._event is None:
                self._event = asyncio.Event()  # made on the server's loop
            self.held[key] = self.held.get(key, 0) + 1
            self.most = max(self.most, len(self.held))
            if len(self.held) >= self.count:
                self.opened = True
                self._event.set()
            try:
                await asyncio.wait_for(self._event.wait(), self.timeout)
            except TimeoutError:
                pass
            finally:
                self.held[key] -= 1
                if not self.held[key]:
                    del self.held[key]
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
