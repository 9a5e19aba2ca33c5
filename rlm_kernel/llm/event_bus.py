"""`EventBus`: a thread-safe publish/subscribe list of `CallEvent` observers (one per LLM session)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlm_kernel.llm.events import CallEvent

__all__ = ["EventBus"]


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
