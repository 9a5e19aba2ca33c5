"""`LLMSession`: what one kernel owns in the LLM layer, in one object made at start and passed down.

A session holds the `%rlm set` settings, the default client, the session budget, the link to the broker
process, the event bus, the parent message of the running cell, and the per-session state of the layers
above (`slot`: widgets, analysis). The kernel's launcher (`python -m rlm_kernel`) makes one with the broker
link and activates it (`activate`); the public helpers (`get_client()`, `get_session_budget()`, `bus`,
`%rlm set`) act on the current one (`current_session()`). A script without a kernel gets one on first use;
a test makes its own (`use_session`), so no test resets module state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from rlm_kernel.llm.event_bus import EventBus

if TYPE_CHECKING:
    from rlm_kernel.llm.broker_link import BrokerLink
    from rlm_kernel.llm.budget import Budget
    from rlm_kernel.llm.client import LLMClient

__all__ = ["LLMSession", "activate", "current_session", "use_session"]

T = TypeVar("T")


class LLMSession:
    """The LLM layer's state for one kernel (see the module docstring). Thread-safe through `lock`.

    `link` is the broker link (None: this process makes its own model calls). The settings, client and
    budget fields belong to `llm.config`, `llm.client` and `llm.budget`, which read and write them under
    `lock`; the `*_version` counters say which settings a client or budget was built from.
    """

    def __init__(self, *, link: BrokerLink | None = None) -> None:
        self.lock = threading.RLock()
        self.link = link
        self.bus = EventBus()
        self.parent: dict[str, Any] = {}
        """The parent message of the running (or last) execute_request; {} outside a kernel."""
        self.settings: dict[str, Any] = {}
        """`%rlm set` values, parsed (`llm.session_settings.set_setting`)."""
        self.settings_version = 0
        self.client: LLMClient | None = None
        self.client_version = -1
        self.budget: Budget | None = None
        self.budget_version = -1
        self._slots: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"LLMSession(link={'yes' if self.link else 'no'}, settings={sorted(self.settings)})"

    def slot(self, key: str, factory: Callable[[], T]) -> T:
        """Per-session state of a layer above (e.g. `"widgets.throttle"`): made by `factory` on first use."""
        with self.lock:
            if key not in self._slots:
                self._slots[key] = factory()
            return self._slots[key]  # type: ignore[no-any-return]

    def close(self) -> None:
        """Retire the default client (it closes once its calls finish), close the broker link and every slot
        that can be closed (e.g. stop the offline model server, unsubscribe the widgets)."""
        with self.lock:
            client, self.client = self.client, None
            link, self.link = self.link, None
            slots, self._slots = list(self._slots.values()), {}
        if client is not None:
            client.retire()
        if link is not None:
            link.close()
        for value in slots:
            close = getattr(value, "close", None)
            if callable(close):
                close()


_current: LLMSession | None = None
_current_lock = threading.Lock()


def current_session() -> LLMSession:
    """The active session: the kernel's (made by the launcher with its broker link), a test's
    (`use_session`), or — in a script or a process without a broker — one made now."""
    global _current
    session = _current
    if session is not None:
        return session
    with _current_lock:
        if _current is None:
            _current = LLMSession()
        return _current


def activate(session: LLMSession) -> LLMSession:
    """Make `session` the active one (the kernel's shell does this once at start); returns it."""
    global _current
    with _current_lock:
        _current = session
    return session


@contextmanager
def use_session(session: LLMSession) -> Iterator[LLMSession]:
    """Make `session` the active one for the block, then restore the one before (for tests and tools)."""
    global _current
    with _current_lock:
        before, _current = _current, session
    try:
        yield session
    finally:
        with _current_lock:
            _current = before
