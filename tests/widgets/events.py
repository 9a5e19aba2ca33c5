"""Synthetic `CallEvent` streams for widget tests: what the LLM layer emits for a batch, without any LLM.

`batch_events(...)` yields the events of one fan-out in a realistic order; `FakeClock` drives time by hand.
"""

from __future__ import annotations

from collections.abc import Iterator

from rlm_kernel.llm.events import CallEvent

__all__ = ["FakeClock", "batch_events", "call_events"]


class FakeClock:
    """A hand-driven monotonic clock."""

    def __init__(self, start: float = 100.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


def call_events(
    batch_id: str,
    index: int,
    *,
    outcome: str = "finish",
    retries: int = 0,
    input_tokens: int = 10,
    output_tokens: int = 3,
    cost_usd: float = 0.0,
    parent_batch_id: str | None = None,
    owner: str | None = "cell-1",
) -> list[CallEvent]:
    """The events of one call: start, `retries` × retry, then finish | cached | failed."""
    common = dict(
        batch_id=batch_id,
        parent_batch_id=parent_batch_id,
        owner=owner,
        index=index,
        call_id=f"{batch_id}:{index}",
    )
    if outcome == "cached":
        return [CallEvent(kind="cached", **common)]
    events = [CallEvent(kind="start", **common)]
    events += [CallEvent(kind="retry", attempt=a + 1, **common) for a in range(retries)]
    if outcome == "failed":
        events.append(CallEvent(kind="failed", error="HTTP 500 from provider", **common))
    else:
        events.append(
            CallEvent(
                kind="finish",
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost_usd=cost_usd,
                **common,
            )
        )
    return events


def batch_events(
    batch_id: str,
    n: int,
    *,
    failed: frozenset[int] = frozenset(),
    cached: frozenset[int] = frozenset(),
    parent_batch_id: str | None = None,
    owner: str | None = "cell-1",
    end: bool = True,
    **kwargs: object,
) -> Iterator[CallEvent]:
    """batch_start, every call's events (sequentially), batch_end."""
    yield CallEvent(
        kind="batch_start", batch_id=batch_id, parent_batch_id=parent_batch_id, owner=owner, total=n
    )
    for i in range(n):
        outcome = "failed" if i in failed else "cached" if i in cached else "finish"
        yield from call_events(
            batch_id, i, outcome=outcome, parent_batch_id=parent_batch_id, owner=owner, **kwargs
        )
    if end:
        yield CallEvent(
            kind="batch_end", batch_id=batch_id, parent_batch_id=parent_batch_id, owner=owner, total=n
        )
