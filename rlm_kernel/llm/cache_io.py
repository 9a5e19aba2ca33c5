"""Cache reads and writes off the HTTP loop: a small thread pool, a bounded wait, then calls go on without it.

A cache file locked by another process (SQLite waits up to its busy timeout) must not stall a fan-out: after
`WAIT` seconds the call goes on as a miss, or keeps its answer unrecorded, and the cache is skipped for
`BACKOFF` seconds. Used where calls are made (the broker, or a client without one).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time

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

    def busy(self) -> bool:
        """Whether the cache recently failed to answer in time (it is skipped for a while)."""
        return time.monotonic() < self._busy_until

    async def _bounded(self, fn: object, *args: object) -> object:
        fut = asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)  # type: ignore[arg-type]
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.wait)
        except TimeoutError:
            self._busy_until = time.monotonic() + BACKOFF
            return BUSY

    async def get(self, provider: str, req: ChatRequest) -> CacheEntry | None | object:
        """The recorded entry, None on a miss, or `BUSY`."""
        if self.busy():
            return BUSY
        return await self._bounded(self.cache.get, provider, req)

    async def put(self, provider: str, req: ChatRequest, resp: ChatResponse) -> str | None:
        """Record `resp`; None when recorded, else why it was not (the answer is kept either way)."""
        if self.busy():
            return f"the LLM cache {self.cache.path} is locked (by another process?)"
        try:
            result = await self._bounded(self.cache.put, provider, req, resp)
        except Exception as exc:  # noqa: BLE001 - a cache write failure must not lose a paid answer
            return f"{type(exc).__name__}: {redact(exc)}"
        if result is BUSY:
            return f"the LLM cache {self.cache.path} stayed locked for {self.wait:g} s (by another process?)"
        return None

    def close(self) -> None:
        """Stop the worker threads (a write still waiting for a lock finishes or fails on its own)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
