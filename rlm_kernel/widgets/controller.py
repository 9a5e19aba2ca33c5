"""Fan-out controller: bus events become a live widget and a final summary line in the cell that started them.

Subscribes to `rlm_kernel.llm.events.bus`; output goes through a `Sink` (the kernel's, or a test's).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rlm_kernel.llm.events import CallEvent, bus
from rlm_kernel.widgets.display_mode import resolve_mode
from rlm_kernel.widgets.fanout import FanoutView
from rlm_kernel.widgets.state import FanoutTracker
from rlm_kernel.widgets.text import fanout_summary
from rlm_kernel.widgets.throttle import Coalescer, Scheduler, default_scheduler

__all__ = ["FanoutController", "Sink"]


class Sink(Protocol):
    """Where a fan-out's output goes. `parent` is an opaque handle naming the starting cell."""

    def parent_for(self, owner: str | None) -> Any: ...

    def show(self, widget: Any, parent: Any, fallback: str = "") -> Any:
        """Display `widget` in the cell; returns a handle for `finish` (or None)."""

    def finish(self, widget: Any, parent: Any, handle: Any, summary: str) -> None:
        """Make `summary` the text form of the display `handle` (what a frontend without widgets shows)."""

    def write(self, text: str, parent: Any) -> None: ...


@dataclass
class _Live:
    root_id: str
    mode: str
    parent: Any
    view: FanoutView | None = None
    coalescer: Coalescer | None = None
    handle: Any = None


class FanoutController:
    """Shows each root fan-out (a batch with no known parent batch) in the cell that started it.

    widgets mode: a `FanoutView` displayed at batch_start, updated at most every `interval` seconds, given its
    final state at batch_end, when the one-line summary becomes the display's text form (shown only where
    widgets cannot render, e.g. in an nbconvert export — never as a second line under the widget); text mode:
    nothing live, the summary is written as a line. off: nothing.
    """

    def __init__(
        self,
        sink: Sink,
        mode: Callable[[], str] = lambda: resolve_mode()[0],
        tracker: FanoutTracker | None = None,
        scheduler: Scheduler | None = None,
        interval: float = 0.1,
        timing: bool = True,
        tick: float = 1.0,
    ) -> None:
        self.sink = sink
        self.mode = mode
        self.tracker = tracker if tracker is not None else FanoutTracker()
        self.scheduler = scheduler
        self.interval = interval
        self.timing = timing
        self.tick = tick
        self._lock = threading.Lock()
        self._live: dict[str, _Live] = {}
        self._unsubscribe: Callable[[], None] | None = None

    def subscribe(self, subscribe: Callable[..., Callable[[], None]] = bus.subscribe) -> FanoutController:
        if self._unsubscribe is None:
            self._unsubscribe = subscribe(self.handle)
        return self

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def handle(self, event: CallEvent) -> None:
        state = self.tracker.handle(event)
        if state is None or event.batch_id is None:
            return
        if event.kind == "batch_start" and state.parent_batch_id is None:
            self._open(event)
            return
        root_id = self.tracker.root_of(event.batch_id)
        with self._lock:
            live = self._live.get(root_id or "")
        if live is None:
            return
        if event.kind == "batch_end" and event.batch_id == live.root_id:
            self._finish(live)
        elif live.coalescer is not None:
            live.coalescer.mark()

    def _open(self, event: CallEvent) -> None:
        root_id = event.batch_id or ""
        try:
            mode = self.mode()
        except ValueError as exc:  # an invalid display setting must not break the calls
            mode = "text"
            self.sink.write(f"rlm: {exc}; showing fan-outs as text", self.sink.parent_for(event.owner))
        live = _Live(root_id=root_id, mode=mode, parent=None)
        if mode != "off":
            live.parent = self.sink.parent_for(event.owner)
        if mode == "widgets":
            snap = self.tracker.snapshot(root_id)
            if snap is not None:
                view = FanoutView(snap)
                live.view = view
                live.coalescer = Coalescer(
                    lambda: self._refresh(root_id, view), interval=self.interval, scheduler=self.scheduler
                )
                live.handle = self.sink.show(
                    view.widget, live.parent, f"[fan-out widget: {snap.total} calls]"
                )
        with self._lock:
            self._live[root_id] = live
        if live.coalescer is not None:
            self._tick(root_id)

    def _tick(self, root_id: str) -> None:
        """Refresh a live view every `tick` seconds even without events, so elapsed time and ETA keep moving
        while slow calls are out."""
        scheduler = self.scheduler if self.scheduler is not None else default_scheduler()

        def again() -> None:
            with self._lock:
                live = self._live.get(root_id)
            if live is not None and live.coalescer is not None:
                live.coalescer.mark()
                scheduler.call_at(scheduler.clock() + self.tick, again)

        scheduler.call_at(scheduler.clock() + self.tick, again)

    def _refresh(self, root_id: str, view: FanoutView) -> None:
        snap = self.tracker.snapshot(root_id)
        if snap is not None:
            view.update(snap)

    def _finish(self, live: _Live) -> None:
        with self._lock:
            self._live.pop(live.root_id, None)
        if live.coalescer is not None:
            live.coalescer.close(final_flush=True)
        snap = self.tracker.snapshot(live.root_id)
        self.tracker.forget(live.root_id)
        if snap is None or live.mode not in ("text", "widgets"):
            return
        summary = fanout_summary(snap, timing=self.timing)
        if live.mode == "widgets" and live.view is not None and live.handle is not None:
            self.sink.finish(live.view.widget, live.parent, live.handle, summary)
        else:
            self.sink.write(summary, live.parent)
