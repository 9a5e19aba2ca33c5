"""Call events: what the LLM layer tells observers (widgets, trajectories) about every model call.

The LLM layer publishes; subscribers receive `CallEvent`s synchronously on the thread that emitted them and
must not block. Subscribers never receive live clients, keys or httpx objects — only the plain fields below.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["CallEvent", "EventBus", "EventKind", "bus"]

EventKind = Literal["batch_start", "batch_end", "start", "retry", "finish", "cached", "failed"]


@dataclass(frozen=True, slots=True)
class CallEvent:
    """One thing that happened to one call (or to a batch of calls).

    `batch_id` groups the calls of one fan-out; `parent_batch_id` nests a fan-out started inside another
    (a sub-RLM fanning out). `index` is the item's position in its batch. For `batch_start`, `total` is the
    number of items. Token and cost figures are those reported by the provider (0 when unknown).
    `owner` is an opaque tag (e.g. the Jupyter parent header's msg_id) naming the cell that started the batch.
    """

    kind: EventKind
    call_id: str = ""
    batch_id: str | None = None
    parent_batch_id: str | None = None
    owner: str | None = None
    index: int | None = None
    total: int | None = None
    tier: str | None = None
    model: str | None = None
    provider: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempt: int = 0
    error: str | None = None
    depth: int = 0
    time: float = 0.0
    extra: dict[str, object] = field(default_factory=dict)


class EventBus:
    """A thread-safe publish/subscribe list. A failing subscriber never breaks a call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[Callable[[CallEvent], None]] = []

    def subscribe(self, callback: Callable[[CallEvent], None]) -> Callable[[], None]:
        """Register `callback`; returns a function that unsubscribes it."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def emit(self, event: CallEvent) -> None:
        """Deliver `event` to every subscriber; their exceptions are swallowed (never break a call)."""
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception:  # noqa: BLE001 - an observer must never break a model call
                pass


bus = EventBus()
"""The process-wide bus the LLM layer emits on."""
