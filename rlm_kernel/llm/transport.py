"""The HTTP transport under every provider: httpx's API over aiohttp's connection pool (httpx-aiohttp).

Why: plain httpx 0.28 spends ~10 ms CPU per call in its pool at concurrency 64 (encode/httpx#3215); the
aiohttp transport stays under 1 ms, which is what makes 1000-call fan-outs finish near the ideal ceil(N/C)·L.
httpx and aiohttp are imported on the first client creation, not with this module: together they take about
half a second, which every kernel start would otherwise pay before any model call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import httpx

__all__ = ["TransportKind", "make_http_client"]

TransportKind = Literal["aiohttp", "httpx"]


def make_http_client(
    *,
    max_connections: int,
    connect_timeout: float,
    read_timeout: float,
    kind: TransportKind = "aiohttp",
    proxy: str | None = None,
) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` with explicit limits; must be created and used on one event loop.

    The pool timeout is None on purpose: callers bound concurrency with a semaphore no larger than the pool,
    so a request waits for a slot in the semaphore (not in the pool) and a long queue never times out there.
    Proxies come only from `proxy` (environment proxy variables are ignored, so local servers stay local).
    """
    import httpx

    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections, keepalive_expiry=30.0
    )
    timeout = httpx.Timeout(connect=connect_timeout, read=read_timeout, write=read_timeout, pool=None)
    proxy_obj = httpx.Proxy(proxy) if proxy else None
    if kind == "aiohttp":
        from httpx_aiohttp import AiohttpTransport

        transport: httpx.AsyncBaseTransport = AiohttpTransport(
            limits=limits, trust_env=False, proxy=proxy_obj
        )
    elif kind == "httpx":
        transport = httpx.AsyncHTTPTransport(limits=limits, trust_env=False, proxy=proxy_obj)
    else:
        raise ValueError(f"transport must be 'aiohttp' or 'httpx', got {kind!r}")
    return httpx.AsyncClient(transport=transport, timeout=timeout, trust_env=False, follow_redirects=False)
