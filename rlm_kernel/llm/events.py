"""Call events: what the LLM layer tells observers (widgets, trajectories) about every model call.

The LLM layer publishes; subscribers receive `CallEvent`s synchronously on the thread that emitted them and
must not block. Subscribers never receive live clients, keys or httpx objects — only the plain fields below.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from rlm_kernel.callscope import call_scope, current_scope
from rlm_kernel.llm.event_bus import EventBus
from rlm_kernel.llm.session import current_session

__all__ = [
    "CANCELLED",
    "BatchEvents",
    "CallEvent",
    "EventBus",
    "EventKind",
    "bus",
    "current_batch",
    "current_owner",
    "current_parent",
    "inside_batch",
    "set_current_parent",
]

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


class _SessionBus:
    """`bus`: the current LLM session's `EventBus` (`LLMSession.bus`), found at each call."""

    def subscribe(self, callback: Callable[[CallEvent], None]) -> Callable[[], None]:
        """Register `callback` on the current session's bus; returns a function that unsubscribes it."""
        return current_session().bus.subscribe(callback)

    def emit(self, event: CallEvent) -> None:
        """Deliver `event` to the current session's subscribers."""
        current_session().bus.emit(event)


bus = _SessionBus()
"""The bus the LLM layer emits on: the current session's (the kernel's; a test's own under `use_session`)."""


CANCELLED = "cancelled"
"""The `error` of a `failed` event for a call or item cut short by an interrupt (`cancel_all`)."""


def current_batch() -> str | None:
    """The fan-out whose item is running in this context (set by `inside_batch`), or None.

    `complete_batch` nests the fan-outs it starts under it (`parent_batch_id`), and single calls carry it as
    their `parent_batch_id` (with no `batch_id` of their own), so work done inside one item of a fan-out —
    e.g. one sub-RLM of `rlm_query_batched` — shows under that fan-out. Read from the call scope.
    """
    return current_scope().parent_batch_id


@contextmanager
def inside_batch(batch_id: str | None) -> Iterator[None]:
    """Make `batch_id` the current fan-out (the call scope's parent batch) for the block."""
    with call_scope(parent_batch_id=batch_id):
        yield


def set_current_parent(parent: dict[str, Any]) -> None:
    """Record the running execute_request's parent message (the kernel calls this as each cell starts)."""
    current_session().parent = parent or {}


def current_parent() -> dict[str, Any]:
    """The parent message of the running (or last) execute_request; `["header"]`, `["msg_id"]` as usual.

    Use it to route output from background threads (`set_thread_parent`) and to tag events with their owner.
    Returns {} before the first cell and outside the kernel.
    """
    return current_session().parent


def current_owner() -> str | None:
    """The msg_id of the cell that is running in this context (the call scope's owner; None outside cells)."""
    return current_scope().owner


_UNSET: object = object()


class BatchEvents:
    """The events of one fan-out whose items are not single model calls (e.g. the sub-RLMs of
    `rlm_query_batched`), emitted like `complete_batch`'s: batch_start, per item start then finish or
    failed (with `index`), batch_end with the totals.

    Use as a context manager (batch_start on entry, batch_end on exit, whatever happens), run each item
    between `start(i)` and `finish(i)` / `fail(i, error)` inside `with batch.inside():` so that the model
    calls and fan-outs the item makes nest under this fan-out. It nests under the current fan-out itself.

    Token and cost figures follow the fan-out widgets' rule (a fan-out's figures include its nested ones):
    an item's `finish` (or `failed`: a sub-RLM without an answer has still spent tokens) carries the usage
    of the single calls it made outside any nested fan-out — those that name this fan-out as their
    `parent_batch_id` — so nothing is counted twice. When items overlap (parallel sub-RLMs), each one's
    figures are what settled since the previous item ended; the fan-out's totals stay exact.
    """

    def __init__(
        self,
        total: int,
        *,
        label: str | None = None,
        depth: int = 0,
        parent_batch_id: str | None | object = _UNSET,
        owner: str | None | object = _UNSET,
        kind: str = "items",
        events: EventBus | None = None,
    ) -> None:
        self.batch_id = uuid.uuid4().hex[:12]
        self.total = total
        self.label = label
        self.depth = depth
        self.parent_batch_id = current_batch() if parent_batch_id is _UNSET else parent_batch_id
        self.owner = current_owner() if owner is _UNSET else owner
        self.kind = kind
        self._bus = events if events is not None else current_session().bus
        self._lock = threading.Lock()
        self._usage = [0, 0, 0.0]  # own (un-nested) single calls of the running item: in, out, usd
        self._started: dict[int, float] = {}
        self._t0 = 0.0
        self.ok = 0
        self.failed = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self._unsubscribe: Callable[[], None] | None = None

    def _emit(self, kind: EventKind, **fields: object) -> None:
        self._bus.emit(
            CallEvent(
                kind,
                batch_id=self.batch_id,
                parent_batch_id=self.parent_batch_id,
                owner=self.owner,
                depth=self.depth,
                time=time.time(),
                **fields,  # type: ignore[arg-type]
            )
        )

    def _observe(self, event: CallEvent) -> None:
        if event.kind == "finish" and event.batch_id is None and event.parent_batch_id == self.batch_id:
            with self._lock:
                self._usage[0] += event.input_tokens
                self._usage[1] += event.output_tokens
                self._usage[2] += event.cost_usd

    def __enter__(self) -> BatchEvents:
        self._t0 = time.monotonic()
        self._unsubscribe = self._bus.subscribe(self._observe)
        self._emit("batch_start", total=self.total, extra={"label": self.label, "kind": self.kind})
        return self

    def __exit__(self, *exc: object) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._emit(
            "batch_end",
            total=self.total,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            latency_s=time.monotonic() - self._t0,
            extra={"label": self.label, "kind": self.kind, "ok": self.ok, "failed": self.failed},
        )

    def _call_id(self, index: int) -> str:
        return f"{self.batch_id}.{index}"

    @contextmanager
    def inside(self) -> Iterator[None]:
        """Run the block as part of this fan-out (its model calls and fan-outs nest under it)."""
        with inside_batch(self.batch_id):
            yield

    def start(self, index: int) -> None:
        """Item `index` starts (items may overlap: each `finish`/`fail` takes what settled since the last)."""
        self._started[index] = time.monotonic()
        self._emit("start", call_id=self._call_id(index), index=index)

    def _took(self, index: int) -> float:
        started = self._started.pop(index, None)
        return 0.0 if started is None else time.monotonic() - started

    def finish(self, index: int) -> None:
        """Item `index` succeeded; its event carries the usage of its own single calls."""
        self.ok += 1
        self._end("finish", index)

    def fail(self, index: int, error: str) -> None:
        """Item `index` failed with `error` (`CANCELLED` for an interrupt); what it spent is still counted."""
        if error != CANCELLED:
            self.failed += 1
        self._end("failed", index, error=error)

    def _end(self, kind: EventKind, index: int, **fields: object) -> None:
        tin, tout, usd = self._take_usage()
        self._emit(
            kind,
            call_id=self._call_id(index),
            index=index,
            input_tokens=tin,
            output_tokens=tout,
            cost_usd=usd,
            latency_s=self._took(index),
            **fields,
        )

    def _take_usage(self) -> tuple[int, int, float]:
        with self._lock:
            tin, tout, usd = self._usage
            self._usage = [0, 0, 0.0]
        self.input_tokens += int(tin)
        self.output_tokens += int(tout)
        self.cost_usd += float(usd)
        return int(tin), int(tout), float(usd)
