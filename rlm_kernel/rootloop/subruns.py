"""Parallel sub-RLMs: the runs of `rlm_query_batched` advanced together, on the thread that called it.

Each sub-RLM is a `run_rlm_steps` generator (see `steps`), driven one root call at a time inside its own
cooperative task (`rlm_kernel.cooperative`: a greenlet with its own `contextvars.Context`, so its budget
scope and fan-out stay its own). Up to `subrun_concurrency` runs (setting, default 4) are in flight. A task
runs until it waits for a model — its root call, or a call its code block makes (`llm_query`,
`llm_query_batched`, a nested `rlm_query`, `map_reduce`, `find_relevant(use_llm_scoring=True)`) — and the
driver then runs another whose call has answered, or waits for the first answer. Every line of the blocks
runs here, in the cell's thread, under the cell's limits; only the HTTP calls run elsewhere. An interrupt or
the cell's time limit stops every run still going (their calls are cancelled, and each unwinds through its
own handlers) before it propagates.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from rlm_kernel import cooperative
from rlm_kernel.llm import event_loop
from rlm_kernel.llm.config import register_setting
from rlm_kernel.llm.errors import LLMCancelled
from rlm_kernel.rootloop.steps import RunSteps, drive
from rlm_kernel.sandbox.errors import CellTimeout
from rlm_kernel.sandbox.limits import cell_limits, uninterruptible
from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["DEFAULT_CONCURRENCY", "concurrency", "register_concurrency_setting", "run_concurrently"]

DEFAULT_CONCURRENCY = 4
_MAX_CONCURRENCY = 64
_WAKE = 0.2  # seconds: the wait wakes this often so interrupts and cell time limits are handled promptly


def _parse_concurrency(value: object) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ValueError(f"subrun_concurrency must be a whole number, got {value!r}") from None
    if not 1 <= n <= _MAX_CONCURRENCY:
        raise ValueError(f"subrun_concurrency must be between 1 and {_MAX_CONCURRENCY}, got {n}")
    return n


def register_concurrency_setting() -> None:
    """Make `subrun_concurrency` (sub-RLMs of one `rlm_query_batched` run at once) a setting."""
    register_setting(
        "subrun_concurrency",
        _parse_concurrency,
        DEFAULT_CONCURRENCY,
        f"how many sub-RLMs of one rlm_query_batched run at once (1-{_MAX_CONCURRENCY}, default "
        f"{DEFAULT_CONCURRENCY}; 1 runs them one after another)",
    )


def concurrency() -> int:
    """The `subrun_concurrency` setting of the session's client."""
    from rlm_kernel import llm

    extra = getattr(llm.get_client().config, "extra", None) or {}
    value = extra.get("subrun_concurrency")
    return int(value) if value else DEFAULT_CONCURRENCY


class _Driver:
    def __init__(
        self,
        makers: list[Callable[[], RunSteps]],
        limit: int,
        on_start: Callable[[int], None],
        on_end: Callable[[int, object, BaseException | None, float], bool],
        session: object | None,
    ) -> None:
        self.makers, self.limit = makers, max(1, limit)
        self.on_start, self.on_end = on_start, on_end
        self.session = session
        swap = getattr(session, "switch_output", None)
        self.hub = cooperative.Hub(swap, event_loop.cancel)
        self.waiting = deque(range(len(makers)))
        self.started: dict[int, float] = {}
        self.unsettled: list[cooperative.Task] = []  # ended, not yet reported

    def run(self) -> list[int]:
        """Run every item; returns the indexes never started (after `on_end` asked to stop).

        The whole batch runs inside the session's `cell_limits` (pass-through inside a cell, as always in a
        kernel): the runs' blocks take turns part-way through, so no one block may own the timers."""
        session = self.session
        if not isinstance(session, SandboxSession):
            return self.loop()
        with cell_limits(session):
            return self.loop()

    def loop(self) -> list[int]:
        hub = self.hub
        try:
            while self.waiting or hub.tasks:
                while self.waiting and len(hub.tasks) < self.limit:
                    i = self.waiting.popleft()
                    self.on_start(i)
                    self.started[i] = time.monotonic()
                    hub.spawn(self.task(i), i)  # runs it to its first model call
                    self.settle()
                self.check_time_limit()
                for task in hub.ready(_WAKE):
                    hub.resume(task)
                self.settle()
        except BaseException as err:
            stopped = hub.stop(self.stop_error(err))
            self.report(self.unsettled + stopped)
            raise
        return list(self.waiting)

    def task(self, i: int) -> Callable[[], Any]:
        """Item i as a task: its run, made and driven in the task's own context, one root call at a time —
        every wait (root calls, and the model calls of its blocks) lets the other tasks run."""
        return lambda: drive(self.makers[i]())

    def settle(self) -> None:
        """Report the tasks that ended; an interrupt or time limit one of them ended with is raised."""
        self.unsettled += self.hub.finished()
        while self.unsettled:
            task = self.unsettled.pop(0)
            value, error = task.outcome if task.outcome is not None else (None, None)
            if error is not None and not isinstance(error, Exception):
                raise error
            seconds = time.monotonic() - self.started.pop(task.index, time.monotonic())
            if not self.on_end(task.index, value, error, seconds):
                self.waiting.clear()  # e.g. the budget is exhausted: the rest are not started

    def report(self, tasks: list[cooperative.Task]) -> None:
        """After a stop: report the runs that ended meanwhile or were stopped (their partial runs are kept
        in the caller's trajectory); the batch's own error is what propagates."""
        for task in sorted(tasks, key=lambda t: t.index):
            value, error = task.outcome if task.outcome is not None else (None, None)
            if error is not None and not isinstance(error, Exception):
                continue  # no run to report: it ended with the interrupt itself
            seconds = time.monotonic() - self.started.pop(task.index, time.monotonic())
            with contextlib.suppress(BaseException):  # `on_end` raises for a stopped run: already raising
                self.on_end(task.index, value, error, seconds)

    def check_time_limit(self) -> None:
        """The cell's time limit ends the batch (each sub-RLM also ends its own run at its next step)."""
        cancelled = getattr(self.session, "cancelled", None)
        if cancelled:
            raise CellTimeout(cancelled)

    def stop_error(self, cause: BaseException) -> Callable[[], BaseException]:
        """What the runs still going are stopped with: the interrupt, the time limit, or a cancellation."""
        if isinstance(cause, KeyboardInterrupt):
            return KeyboardInterrupt
        cancelled = getattr(self.session, "cancelled", None)
        if isinstance(cause, CellTimeout) or cancelled:
            text = cancelled or str(cause)
            return lambda: CellTimeout(text)
        reason = f"{type(cause).__name__}: {cause}"
        return lambda: LLMCancelled(f"the batch of sub-RLMs stopped ({reason})")


# The batch's own bookkeeping runs with the cell's frames below it: a sticky time limit raising part-way
# through (between a switch and the swap of output captures back, or in the middle of stopping the tasks)
# would leave tasks suspended, to be finished later by the garbage collector outside the cell. The loop
# checks the cell's cancellation itself (`check_time_limit`, at least every `_WAKE` seconds).
uninterruptible(
    _Driver.run,
    _Driver.loop,
    _Driver.settle,
    _Driver.report,
    cooperative.Hub.spawn,
    cooperative.Hub.resume,
    cooperative.Hub.finished,
    cooperative.Hub.ready,
    cooperative.Hub.stop,
)


def run_concurrently(
    makers: list[Callable[[], RunSteps]],
    limit: int,
    on_start: Callable[[int], None],
    on_end: Callable[[int, object, BaseException | None, float], bool],
    session: object | None = None,
) -> list[int]:
    """Run the step generators `makers[i]()` with at most `limit` in flight; returns the indexes not started.

    `on_start(i)` is called before item i starts; `on_end(i, result, error, seconds)` when it ends (with what
    its generator returned, or the exception it raised) and returns False to start no more items. An
    exception raised by `on_end`, an interrupt or a cell time limit cancels the calls in flight, stops
    the other runs and propagates. `session` (the sandbox session the runs' blocks use) keeps each block's
    output capture and accounting with its own run while the runs take turns.
    """
    return _Driver(makers, limit, on_start, on_end, session).run()
