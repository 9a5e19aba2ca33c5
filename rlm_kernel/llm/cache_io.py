"""Cache reads and writes off the HTTP loop: a small thread pool, a bounded wait, then calls go on without it.

A cache file locked by another process (SQLite waits up to its busy timeout) must not stall a fan-out: after
an operation has run `WAIT` seconds the call goes on as a miss, or keeps its answer unrecorded, and the cache
is skipped for `BACKOFF` seconds (operations still queued then give up at once). Time spent queued behind
this process's own cache work does not count: a big fan-out on a busy machine is not a locked cache, and
counting it made writes give up (unrecorded) and later reads in the same session miss. Used where calls are
made (the broker, or a client without one).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable

from rlm_kernel.llm.cache import CacheEntry, ResponseCache
from rlm_kernel.llm.providers.base import ChatRequest, ChatResponse
from rlm_kernel.llm.redact import redact

__all__ = ["BUSY", "CacheIO"]

WAIT = 5.0
BACKOFF = 10.0
BUSY = object()
"""What `CacheIO.get` returns when the cache could not answer in time."""


class CacheIO:
    """Async access to one `ResponseCache` on its own worker threads."""

    def __init__(self, cache: ResponseCache, wait: float = WAIT) -> None:
        self.cache = cache
        self.wait = wait
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="rlm-cache")
        self._busy_until = 0.0
        self._lock = threading.Lock()
        self._queued: dict[asyncio.Future[object], asyncio.AbstractEventLoop] = {}  # not yet started
        self._running: dict[object, float] = {}  # operations on a worker now: when each started
        self._writes: list[tuple[str, ChatRequest, ChatResponse, asyncio.Future[str | None]]] = []
        self._writer: asyncio.Task[None] | None = None  # writing `_writes`, a group at a time

    def busy(self) -> bool:
        """Whether the cache recently failed to answer in time (it is skipped for a while)."""
        return time.monotonic() < self._busy_until

    async def _bounded(self, fn: Callable[..., object], *args: object) -> object:
        """`fn(*args)` on a worker: its result, or `BUSY` if it ran `wait` s (or the cache went busy)."""
        loop = asyncio.get_running_loop()
        started: asyncio.Future[object] = loop.create_future()
        with self._lock:
            self._queued[started] = loop

        def run() -> object:
            token = object()
            with self._lock:
                if self._queued.pop(started, None) is None:
                    return BUSY  # given up while queued: the cache went busy meanwhile
                self._running[token] = time.monotonic()
            try:
                loop.call_soon_threadsafe(_resolve, started, None)
                return fn(*args)
            finally:
                with self._lock:
                    del self._running[token]

        fut = loop.run_in_executor(self._pool, run)
        fut.add_done_callback(lambda _: _resolve(started, BUSY))  # cancelled by `close` before it ran
        try:
            while not started.done():  # queued: give up only if a running operation is stuck
                await asyncio.wait({started}, timeout=self._until_stuck())
                if not started.done() and self._until_stuck() == 0.0:
                    self._give_up()
            if started.result() is BUSY:
                return BUSY
        finally:
            with self._lock:
                self._queued.pop(started, None)  # cancelled while queued: never run it
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.wait)
        except TimeoutError:
            self._give_up()
            return BUSY

    def _until_stuck(self) -> float:
        """Seconds until the oldest running operation has run `wait` s (0: it has; `wait` if none runs).

        Also counts operations whose caller is gone (a cancelled call): they still hold a worker."""
        with self._lock:
            oldest = min(self._running.values(), default=None)
        if oldest is None:
            return self.wait
        return max(0.0, oldest + self.wait - time.monotonic())

    def _give_up(self) -> None:
        """An operation ran `wait` s: skip the cache for `BACKOFF` s; the operations still queued give up."""
        self._busy_until = time.monotonic() + BACKOFF
        with self._lock:
            queued, self._queued = self._queued, {}
        for started, loop in queued.items():
            try:
                loop.call_soon_threadsafe(_resolve, started, BUSY)
            except RuntimeError:  # that loop is closed: nothing waits there any more
                pass

    async def get(self, provider: str, req: ChatRequest) -> CacheEntry | None | object:
        """The recorded entry, None on a miss, or `BUSY`."""
        if self.busy():
            return BUSY
        return await self._bounded(self.cache.get, provider, req)

    async def get_many(self, provider: str, reqs: list[ChatRequest]) -> tuple[dict, set[int]] | object:
        """`ResponseCache.get_many` as one bounded operation (a fan-out's lookups cost one worker hop, not
        one each), or `BUSY`."""
        if self.busy():
            return BUSY
        return await self._bounded(self.cache.get_many, provider, reqs)

    async def put(self, provider: str, req: ChatRequest, resp: ChatResponse) -> str | None:
        """Record `resp`; None when recorded, else why it was not (the answer is kept either way).

        Writes are grouped: one group is written at a time, in one transaction, and the answers that arrive
        meanwhile form the next group — a fan-out's recordings cost a worker hop and a commit per group, not
        per answer. Each caller still waits for its own row."""
        if self.busy():
            return f"the LLM cache {self.cache.path} is locked (by another process?)"
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str | None] = loop.create_future()
        self._writes.append((provider, req, resp, done))
        if self._writer is None:
            self._writer = loop.create_task(self._write_groups())
        return await done

    async def _write_groups(self) -> None:
        group: list[tuple[str, ChatRequest, ChatResponse, asyncio.Future[str | None]]] = []
        try:
            while self._writes:
                group, self._writes = self._writes, []
                rows = [(provider, req, resp) for provider, req, resp, _ in group]
                reasons: list[str | None]
                try:
                    result = await self._bounded(self.cache.put_many, rows)
                except Exception as exc:  # noqa: BLE001 - a cache write failure must not lose a paid answer
                    reasons = [f"{type(exc).__name__}: {redact(exc)}"] * len(group)
                else:
                    if result is BUSY:
                        locked = f"the LLM cache {self.cache.path} stayed locked for {self.wait:g} s"
                        reasons = [locked + " (by another process?)"] * len(group)
                    else:
                        reasons = [None if r is None else redact(r) for r in result]  # type: ignore[union-attr]
                for (*_, done), reason in zip(group, reasons, strict=True):
                    if not done.done():
                        done.set_result(reason)
        finally:
            self._writer = None
            left, self._writes = group + self._writes, []
            for *_, done in left:  # only if this task itself was cancelled (its loop shutting down)
                if not done.done():
                    done.set_result("the LLM cache writer stopped before recording it")

    def close(self) -> None:
        """Stop the worker threads (a write still waiting for a lock finishes or fails on its own)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def _resolve(fut: asyncio.Future[object], value: object) -> None:
    if not fut.done():
        fut.set_result(value)
