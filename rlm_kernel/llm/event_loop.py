"""The LLM layer's own asyncio event loop, in one daemon thread, and the registry of in-flight work.

Cells never touch the loop: they submit coroutines and wait on futures; `cancel_all()` stops them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["cancel", "cancel_all", "cancel_all_soon", "in_loop_thread", "run_on_loop", "submit"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_active: dict[concurrent.futures.Future[Any], asyncio.Task[Any] | None] = {}


def _get_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is not None and _thread is not None and _thread.is_alive():
            return _loop
        loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(started.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name="rlm-llm-loop", daemon=True)
        thread.start()
        started.wait(5)
        _loop, _thread = loop, thread
        return loop


def in_loop_thread() -> bool:
    """True when called from the LLM loop's own thread (where blocking on a call would deadlock)."""
    return _thread is not None and threading.current_thread() is _thread


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run `coro` as a task on the LLM loop and return a future for its outcome.

    The future completes only when the task has really finished — after a cancellation, once the task's
    clean-up (budget releases, `failed` events) has run — so a caller that sees it done sees settled state.
    """
    loop = _get_loop()
    fut: concurrent.futures.Future[T] = concurrent.futures.Future()
    with _lock:
        _active[fut] = None

    def finish(task: asyncio.Task[T]) -> None:
        with _lock:
            _active.pop(fut, None)
        if fut.done():
            return
        if task.cancelled():
            fut.cancel()
        elif (exc := task.exception()) is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(task.result())

    def start() -> None:
        if fut.done():  # cancelled before it started
            coro.close()
            with _lock:
                _active.pop(fut, None)
            return
        task = loop.create_task(coro)
        with _lock:
            _active[fut] = task
        task.add_done_callback(finish)

    loop.call_soon_threadsafe(start)
    return fut


def cancel(fut: concurrent.futures.Future[Any]) -> None:
    """Ask the task behind `fut` to stop; `fut` completes (cancelled) once the task has cleaned up."""
    loop = _loop
    if loop is None or fut.done():
        return

    def do_cancel() -> None:
        with _lock:
            task = _active.get(fut)
        if task is not None:
            task.cancel()
        elif not fut.done():
            fut.cancel()

    try:
        loop.call_soon_threadsafe(do_cancel)
    except RuntimeError:  # the loop is closed (interpreter shutdown)
        fut.cancel()


def run_on_loop(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run `coro` on the loop without tracking it (housekeeping such as closing clients)."""
    return asyncio.run_coroutine_threadsafe(coro, _get_loop())


def cancel_all() -> int:
    """Cancel every in-flight and queued model call (kernel interrupt); returns how many were running.

    Cancellation reaches the tasks at their next await — at once for requests waiting on the network, a
    semaphore or a retry sleep. Each waiter then gets its cancellation; the loop keeps running for new calls.
    """
    with _lock:
        futures = list(_active)
    for fut in futures:
        cancel(fut)
    return len(futures)


def cancel_all_soon() -> bool:
    """Cancel, on the loop's own thread, the calls in flight *now*: safe in a signal handler (no lock taken).

    For the kernel's interrupt: the interrupted thread may hold `_lock` (in `submit`), so the handler must not
    take it. The calls are taken at the moment of the interrupt (copying the registry is one C-level step
    under the GIL), so a cancel that waits behind a busy loop never reaches the calls of the next cell.
    Returns False when no loop is running (then no call can be in flight).
    """
    loop = _loop
    if loop is None or loop.is_closed():
        return False
    running = tuple(_active)

    def cancel_those() -> None:
        for fut in running:
            cancel(fut)

    try:
        loop.call_soon_threadsafe(cancel_those)
    except RuntimeError:  # closed in the meantime (interpreter shutdown)
        return False
    return True
