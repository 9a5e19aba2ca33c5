"""Fan-out state: folds `CallEvent`s into per-batch counters (done, in flight, failed, cost, …) and nesting.

Pure logic with an injectable clock; thread-safe; no Jupyter imports. Views read immutable `FanoutSnapshot`s.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from rlm_kernel.llm.events import CANCELLED, CallEvent

__all__ = ["CANCELLED", "FanoutSnapshot", "FanoutState", "FanoutTracker", "RATE_WINDOW_S"]
# CANCELLED (from the events module): the `error` of a `failed` event for a call cut short by an interrupt
# (`cancel_all`); counted apart.

RATE_WINDOW_S = 5.0
"""Rate and ETA use completions in this trailing window once the batch has run longer than it."""


@dataclass(frozen=True, slots=True)
class FanoutSnapshot:
    """A consistent, immutable picture of one fan-out (and its nested fan-outs) at one moment.

    Token and cost figures cover this fan-out and every fan-out nested under it. `done` counts successful
    items (cached ones included); `completed` = done + failed is what the progress bar shows.
    """

    batch_id: str
    label: str | None
    owner: str | None
    depth: int
    total: int
    done: int
    in_flight: int
    failed: int
    retried: int
    cached: int
    cancelled: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    elapsed_s: float
    rate_per_s: float | None
    eta_s: float | None
    finished: bool
    errors: tuple[str, ...] = ()
    children: tuple[FanoutSnapshot, ...] = ()

    @property
    def completed(self) -> int:
        """Items that reached an end: done, failed or cancelled."""
        return self.done + self.failed + self.cancelled

    @property
    def nested_count(self) -> int:
        """Number of fan-outs nested anywhere below this one."""
        return sum(1 + c.nested_count for c in self.children)


@dataclass
class FanoutState:
    """Mutable counters of one batch. Owned by a `FanoutTracker`; read it through `FanoutTracker.snapshot`."""

    batch_id: str
    parent_batch_id: str | None = None
    owner: str | None = None
    label: str | None = None
    depth: int = 0
    total: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    cached: int = 0
    cancelled: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    started_at: float = 0.0
    ended_at: float | None = None
    in_flight_calls: set[str] = field(default_factory=set)
    settled_calls: set[str] = field(default_factory=set)
    completion_times: deque[float] = field(default_factory=deque)
    errors: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


_MAX_ERRORS_KEPT = 5


class FanoutTracker:
    """Aggregates `CallEvent`s into `FanoutState`s keyed by `batch_id`, remembering parent/child nesting.

    Feed it with `handle(event)` (safe from any thread). Events of calls outside any batch are ignored.
    Batches whose `batch_start` was missed are created on first sight, so a late subscriber still counts.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_batches: int = 10_000) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._batches: dict[str, FanoutState] = {}
        self._max_batches = max_batches

    # -- input -------------------------------------------------------------------------------------------
    def handle(self, event: CallEvent) -> FanoutState | None:
        """Fold one event in; returns the batch it touched (None when the event belongs to no batch)."""
        if not event.batch_id:
            return None
        now = self._clock()
        with self._lock:
            state = self._get_or_create(event, now)
            kind = event.kind
            if kind == "batch_start":
                if event.total is not None:
                    state.total = event.total
                state.label = _label(event) or state.label
                state.started_at = now
                state.ended_at = None
            elif kind == "batch_end":
                state.ended_at = now
                state.in_flight_calls.clear()
                if event.total is not None and event.total > state.total:
                    state.total = event.total
            elif kind == "start":
                key = _call_key(event)
                if key not in state.settled_calls:
                    state.in_flight_calls.add(key)
            elif kind == "retry":
                state.retried += 1
            elif kind in ("finish", "cached", "failed"):
                self._settle(state, event, now)
            return state

    def _settle(self, state: FanoutState, event: CallEvent, now: float) -> None:
        key = _call_key(event)
        if key in state.settled_calls:
            return  # a duplicate terminal event must not count twice
        state.settled_calls.add(key)
        state.in_flight_calls.discard(key)
        if event.kind == "failed":
            if event.error == CANCELLED:
                state.cancelled += 1
            else:
                state.failed += 1
                if event.error and len(state.errors) < _MAX_ERRORS_KEPT:
                    state.errors.append(event.error)
            # a failed model call spent nothing; a failed item of a sub-RLM fan-out may have (its root calls)
            state.input_tokens += event.input_tokens
            state.output_tokens += event.output_tokens
            state.cost_usd += event.cost_usd
        else:
            state.done += 1
            if event.kind == "cached":
                state.cached += 1
            else:
                state.input_tokens += event.input_tokens
                state.output_tokens += event.output_tokens
                state.cost_usd += event.cost_usd
        state.completion_times.append(now)
        while state.completion_times and now - state.completion_times[0] > RATE_WINDOW_S:
            state.completion_times.popleft()
        # A batch whose batch_start was missed learns its size from what settles.
        state.total = max(state.total, state.done + state.failed + state.cancelled)

    def _get_or_create(self, event: CallEvent, now: float) -> FanoutState:
        assert event.batch_id is not None
        state = self._batches.get(event.batch_id)
        if state is not None:
            return state
        if len(self._batches) >= self._max_batches:
            self._evict_finished()
        parent_id = event.parent_batch_id if event.parent_batch_id in self._batches else None
        state = FanoutState(
            batch_id=event.batch_id,
            parent_batch_id=parent_id,
            owner=event.owner,
            depth=event.depth,
            started_at=now,
        )
        self._batches[event.batch_id] = state
        if parent_id is not None:
            self._batches[parent_id].children.append(event.batch_id)
        return state

    def _evict_finished(self) -> None:
        """Drop finished root batches and their subtrees, oldest first, to bound memory."""
        for batch_id in list(self._batches):
            state = self._batches.get(batch_id)
            if state is not None and state.parent_batch_id is None and state.ended_at is not None:
                self.forget(batch_id)
                if len(self._batches) < self._max_batches // 2:
                    return

    # -- output ------------------------------------------------------------------------------------------
    def get(self, batch_id: str) -> FanoutState | None:
        with self._lock:
            return self._batches.get(batch_id)

    def root_of(self, batch_id: str) -> str | None:
        """The outermost batch containing `batch_id` (itself when it is a root); None if unknown."""
        with self._lock:
            state = self._batches.get(batch_id)
            while state is not None and state.parent_batch_id is not None:
                state = self._batches.get(state.parent_batch_id)
            return state.batch_id if state is not None else None

    def snapshot(self, batch_id: str, now: float | None = None) -> FanoutSnapshot | None:
        """An immutable picture of `batch_id` and its nested batches (None if unknown)."""
        with self._lock:
            if batch_id not in self._batches:
                return None
            return self._snap(self._batches[batch_id], self._clock() if now is None else now)

    def _snap(self, s: FanoutState, now: float) -> FanoutSnapshot:
        children = tuple(self._snap(self._batches[c], now) for c in s.children if c in self._batches)
        end = s.ended_at if s.ended_at is not None else now
        elapsed = max(0.0, end - s.started_at)
        completed = s.done + s.failed + s.cancelled
        rate = _rate(s, elapsed, end)
        remaining = max(0, s.total - completed)
        eta: float | None
        if s.ended_at is not None or remaining == 0:
            eta = 0.0
        elif rate:
            eta = remaining / rate
        else:
            eta = None
        return FanoutSnapshot(
            batch_id=s.batch_id,
            label=s.label,
            owner=s.owner,
            depth=s.depth,
            total=s.total,
            done=s.done,
            in_flight=len(s.in_flight_calls),
            failed=s.failed,
            retried=s.retried,
            cached=s.cached,
            cancelled=s.cancelled,
            input_tokens=s.input_tokens + sum(c.input_tokens for c in children),
            output_tokens=s.output_tokens + sum(c.output_tokens for c in children),
            cost_usd=s.cost_usd + sum(c.cost_usd for c in children),
            elapsed_s=elapsed,
            rate_per_s=rate,
            eta_s=eta,
            finished=s.ended_at is not None,
            errors=tuple(s.errors),
            children=children,
        )

    def forget(self, batch_id: str) -> None:
        """Drop a batch and everything nested under it (after its view has shown the final state)."""
        with self._lock:
            state = self._batches.pop(batch_id, None)
            if state is None:
                return
            for child in state.children:
                self.forget(child)
            parent = self._batches.get(state.parent_batch_id or "")
            if parent is not None and batch_id in parent.children:
                parent.children.remove(batch_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._batches)


def _rate(s: FanoutState, elapsed: float, now: float) -> float | None:
    """Items completed per second: over the trailing window when the batch is older than it, else overall."""
    completed = s.done + s.failed + s.cancelled
    if completed == 0 or elapsed <= 0:
        return None
    if elapsed > RATE_WINDOW_S and s.ended_at is None:
        recent = sum(1 for t in s.completion_times if now - t <= RATE_WINDOW_S)
        return recent / RATE_WINDOW_S if recent else None
    return completed / elapsed


def _call_key(event: CallEvent) -> str:
    if event.call_id:
        return event.call_id
    return f"#{event.index}" if event.index is not None else f"@{id(event)}"


_MAX_LABEL = 60


def _label(event: CallEvent) -> str | None:
    value = event.extra.get("label")
    if not value:
        return None
    text = " ".join(str(value).split())
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…"
