"""The call scope: which budget, cell, parent fan-out and run a model call made in this context belongs to.

One contextvar holds one immutable `CallScope`; `call_scope(...)` replaces some of its fields for a block.
The kernel sets `owner` around each cell, a run (`rlm_run`, `%%rlm`) sets `budget` and `run`, a fan-out item
sets `parent_batch_id`. The LLM client reads the scope once, in the caller's thread, and sends it with the
request (the broker's ledger charges the budget chain it names); nothing looks these up in module globals.

Stdlib only: the kernel imports this at start-up.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol

__all__ = ["CallScope", "RunSink", "call_scope", "current_scope"]


class RunSink(Protocol):
    """What a run offers the LLM layer: a note of model calls made by code that is not one of its helpers
    (e.g. `map_reduce`, `find_relevant`), so they show in its trajectory with their usage; `prompts` (in
    the order of `completions`) let the run keep what each call was given as possible evidence."""

    def note_llm_calls(
        self,
        kind: str,
        label: str,
        completions: list[Any],
        errors: dict[int, str],
        seconds: float,
        prompts: list[str] | None = None,
    ) -> None: ...


@dataclass(frozen=True)
class CallScope:
    """Where a model call belongs. Every field None means: the session budget, no cell, no fan-out, no run."""

    budget: Any = None
    """The `Budget` charged (None: the session's)."""
    owner: str | None = None
    """The msg_id of the cell that made the call."""
    parent_batch_id: str | None = None
    """The fan-out whose item is running (calls and fan-outs made in it nest under it)."""
    run: RunSink | None = None
    """The run (`rlm_run`/`%%rlm`) whose trajectory records the call."""


_scope: contextvars.ContextVar[CallScope] = contextvars.ContextVar("rlm_call_scope", default=CallScope())  # noqa: B039 - frozen


def current_scope() -> CallScope:
    """The call scope of this context."""
    return _scope.get()


_KEEP: Any = object()


@contextmanager
def call_scope(
    *,
    budget: Any = _KEEP,
    owner: Any = _KEEP,
    parent_batch_id: Any = _KEEP,
    run: Any = _KEEP,
) -> Iterator[CallScope]:
    """Replace the given fields of the scope for the block (the others are inherited)."""
    changes = {
        k: v
        for k, v in (("budget", budget), ("owner", owner), ("parent_batch_id", parent_batch_id), ("run", run))
        if v is not _KEEP
    }
    scope = replace(_scope.get(), **changes)
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)
