"""Cooperative tasks on one thread: greenlets that switch only where kernel code waits for a future.

`rlm_query_batched` runs each sub-RLM as a `Task` of a `Hub` on the thread that called it (the cell's
thread). A task runs until kernel code in it waits for a model call (`wait_any`, which `LLMClient` uses for
every wait); then it hands control to its hub, which runs another task whose call has answered, or waits
for the first answer. So a sub-RLM's code block that calls `llm_query` no longer holds the other sub-RLMs,
and every line of cell code still runs on the cell's thread, under the cell's timers and caps, one line at a
time. There is no other switch point: code that never waits for a model is never interrupted by another
task.

Outside a task `wait_any` is `concurrent.futures.wait`. A hub that itself runs inside a task (a sub-RLM's
own `rlm_query_batched`) waits through `wait_any` too, so nested hubs defer to the outermost one.

Nothing here is handed to a cell: tasks, hubs and the greenlet module stay in kernel frames (a cell cannot
import greenlet, and no helper returns or holds one where a cell can read it). A hub always runs its tasks
to their end before it returns — on an interrupt or a time limit too (`Hub.stop`) — so no suspended task
is ever left for the garbage collector to finish outside the cell.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
from collections.abc import Callable, Collection
from typing import Any

from greenlet import getcurrent, greenlet

__all__ = ["Hub", "Task", "check_stopping", "in_task", "wait_any"]


class Task(greenlet):
    """One callable run cooperatively by a `Hub`: `outcome` is (value, None) or (None, the exception)."""

    def __init__(self, hub: Hub, fn: Callable[[], Any], index: int, state: object) -> None:
        super().__init__(self._main, parent=hub.greenlet)
        self.gr_context = contextvars.copy_context()  # its own context vars, as `Context.run` gave it
        self.hub, self.fn, self.index = hub, fn, index
        self.state = state  # what `Hub.swap` installs while the task runs (e.g. its output capture)
        self.waiting: tuple[concurrent.futures.Future[Any], ...] = ()
        self.outcome: tuple[Any, BaseException | None] | None = None

    def _main(self) -> None:
        try:
            self.outcome = (self.fn(), None)
        except BaseException as err:  # noqa: BLE001 - the hub decides (on_end, or re-raised)
            self.outcome = (None, err)
        finally:
            self.fn = None  # type: ignore[assignment]


def in_task() -> bool:
    """True when the running code is a task of some hub (its waits let other tasks run)."""
    return type(getcurrent()) is Task


def check_stopping() -> None:
    """Raise the stop error now if the running task's hub (or a hub it runs under) is stopping: a task that
    unwinds after an interrupt or a time limit starts no new model call."""
    current = getcurrent()
    while type(current) is Task:
        if current.hub.stopping is not None:
            raise current.hub.stopping()
        current = current.hub.greenlet


def wait_any(
    futures: Collection[concurrent.futures.Future[Any]], timeout: float | None
) -> set[concurrent.futures.Future[Any]]:
    """The futures of `futures` that are done, once at least one is (or, outside a task, `timeout` passed).

    In a task the wait hands control to the task's hub until one of them is done; the timeout is the hub's
    business then (it wakes for signals and time limits itself). A hub that is stopping raises its stop
    error here at once instead: the task unwinds without waiting again."""
    current = getcurrent()
    if type(current) is Task:
        return current.hub.park(current, tuple(futures))
    done, _ = concurrent.futures.wait(
        futures, timeout=timeout, return_when=concurrent.futures.FIRST_COMPLETED
    )
    return done


class Hub:
    """Runs `Task`s on the calling thread, switching among them only where they wait (`wait_any`).

    `swap(state)` installs a task's per-task state and returns the state it replaces (None: a new task's
    fresh state); the hub calls it around every switch, so what the sandbox keeps per running block (its
    output capture and accounting) follows the task that runs. `cancel(future)` stops a model call
    (the LLM loop's cancel); `stop` uses it before it unwinds the tasks.
    """

    def __init__(
        self,
        swap: Callable[[object], object] | None = None,
        cancel: Callable[[concurrent.futures.Future[Any]], None] | None = None,
    ) -> None:
        self.greenlet = getcurrent()
        self.swap = swap if swap is not None else (lambda state: state)
        self.cancel = cancel if cancel is not None else (lambda fut: fut.cancel())
        self.tasks: list[Task] = []
        self.stopping: Callable[[], BaseException] | None = None

    # -- inside a task --------------------------------------------------------------------------------------
    def park(
        self, task: Task, futures: tuple[concurrent.futures.Future[Any], ...]
    ) -> set[concurrent.futures.Future[Any]]:
        """`wait_any` in `task`: back to the hub until one of `futures` is done."""
        if self.stopping is not None:
            raise self.stopping()
        if not futures:
            return set()
        task.waiting = futures
        try:
            self.greenlet.switch()
        finally:
            task.waiting = ()
        return {f for f in futures if f.done()}

    # -- in the hub -----------------------------------------------------------------------------------------
    def spawn(self, fn: Callable[[], Any], index: int) -> Task:
        """Start `fn` as a task (in a copy of the hub's context) and run it to its first wait or its end."""
        task = Task(self, fn, index, None)
        self.tasks.append(task)
        self.resume(task)
        return task

    def resume(self, task: Task, error: BaseException | None = None) -> None:
        """Switch to `task` (raising `error` at its wait, if given) until it waits again or ends."""
        mine = self.swap(task.state)
        try:
            if error is None:
                task.switch()
            else:
                task.throw(error)
        finally:
            task.state = self.swap(mine)

    def finished(self) -> list[Task]:
        """The tasks that have ended (dropped from the hub), in index order."""
        ended = [t for t in self.tasks if t.dead]
        if ended:
            self.tasks = [t for t in self.tasks if not t.dead]
        return sorted(ended, key=lambda t: t.index)

    def ready(self, timeout: float) -> list[Task]:
        """Wait (at most `timeout` s, or cooperatively in an outer hub) until a task's future is done;
        returns the tasks that can go on, in index order."""
        owners: dict[concurrent.futures.Future[Any], Task] = {}
        for task in self.tasks:
            for fut in task.waiting:
                owners[fut] = task
        if not owners:
            return []
        done = wait_any(owners, timeout)
        return sorted({owners[f] for f in done}, key=lambda t: t.index)

    def stop(self, error: Callable[[], BaseException]) -> list[Task]:
        """Stop every task: cancel the calls they wait on, then raise `error()` at each one's wait, so it
        unwinds through its own handlers (a wait there raises at once) to its end. Returns, once all have
        ended, the tasks that had started (with their outcomes); an interrupt that arrives meanwhile is
        raised after that."""
        self.stopping = error
        for task in self.tasks:
            for fut in task.waiting:
                self.cancel(fut)
        stopped: list[Task] = []
        late: BaseException | None = None
        while self.tasks:
            task = self.tasks[0]
            if not task:  # ended, or never started (then it never ran a line)
                self.tasks.pop(0)
                if task.outcome is not None:
                    stopped.append(task)
                continue
            try:
                self.resume(task, error())
            except BaseException as err:  # noqa: BLE001 - a second interrupt: unwind the rest first
                late = late or err
        if late is not None:
            raise late
        return stopped
