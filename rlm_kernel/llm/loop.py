"""The LLM layer's own asyncio event loop, in one daemon thread, and the registry of in-flight work.

Cells never touch the loop: they submit coroutines and wait on futures; `cancel_all()` stops them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["cancel_all", "in_loop_thread", "run_on_loop", "submit"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_active: set[concurrent.futures.Future[Any]] = set()


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
    """Run `coro` on the LLM loop; the returned future is tracked until done so `cancel_all()` can stop it."""
    fut = asyncio.run_coroutine_threadsafe(coro, _get_loop())
    with _lock:
        _active.add(fut)
    fut.add_done_callback(_forget)
    return fut


def _forget(fut: concurrent.futures.Future[Any]) -> None:
    with _lock:
        _active.discard(fut)


def run_on_loop(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run `coro` on the loop without tracking it (housekeeping such as closing clients)."""
    return asyncio.run_coroutine_threadsafe(coro, _get_loop())


def cancel_all() -> int:
    """Cancel every in-flight and queued model call (kernel interrupt); returns how many were running.

    Cancellation reaches the tasks at their next await — at once for requests waiting on the network, a
    semaphore or a retry sleep. The loop itself keeps running, so the next call works.
    """
    with _lock:
        futures = list(_active)
    for fut in futures:
        fut.cancel()
    return len(futures)
