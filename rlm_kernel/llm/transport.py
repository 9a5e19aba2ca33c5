"""The HTTP transport under every provider: one JSON POST → (status, body, headers), over aiohttp's pool.

Why aiohttp directly: at concurrency 64, plain httpx 0.28 spends ~10 ms CPU per call in its pool
(encode/httpx#3215), and httpx's API over aiohttp's pool (httpx-aiohttp) still spent ~0.4 ms of a 0.65 ms call
in httpx's request/response models (URL parsing, header objects, the cookie jar). The LLM layer needs none of
that: it posts JSON and reads the whole reply. `kind="httpx"` keeps plain httpx for comparison.
aiohttp (and httpx) are imported on the first client creation, not with this module: together they take about
half a second, which every kernel start would otherwise pay before any model call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import aiohttp
    import httpx

__all__ = ["HttpClient", "HttpReply", "TransportError", "TransportKind", "dumps", "make_http_client"]

TransportKind = Literal["aiohttp", "httpx"]


class TransportError(Exception):
    """The request got no HTTP answer (connection refused or lost, bad proxy, unreadable reply stream...).

    `__cause__` is the transport's own exception (its type and text are what the call's error shows);
    `timed_out` says a connect or read timeout fired."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


@dataclass(frozen=True, slots=True)
class HttpReply:
    """A whole HTTP answer: status, body, headers (a case-insensitive mapping)."""

    status: int
    content: bytes
    headers: Mapping[str, str]


class HttpClient(Protocol):
    """What the LLM layer needs of HTTP: post a JSON body, get the whole answer; close."""

    async def post_json(self, url: str, headers: dict[str, str], body: Any) -> HttpReply: ...

    async def aclose(self) -> None: ...


def dumps(body: Any) -> bytes:
    """A request's JSON body (compact UTF-8, no NaN: what httpx's `json=` sent)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _ssl_context() -> Any:
    """The certificate store httpx used (certifi's), so switching transports trusts the same servers."""
    import ssl

    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi comes with httpx, a dependency
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class _Aiohttp:
    """`HttpClient` over one `aiohttp.ClientSession` (made lazily, on the loop that uses it)."""

    def __init__(self, max_connections: int, connect_timeout: float, read_timeout: float, proxy: str | None):
        import aiohttp

        self._aiohttp = aiohttp
        self._max_connections = max_connections
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=None, sock_connect=connect_timeout, sock_read=read_timeout
        )
        self._proxy = proxy
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        aiohttp = self._aiohttp
        connector = aiohttp.TCPConnector(
            limit=self._max_connections, limit_per_host=0, keepalive_timeout=30.0, ssl=_ssl_context()
        )
        # trust_env=False: proxies come only from `proxy` (local servers stay local); no cookie jar: an API
        # client has no use for one and it costs CPU per reply
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=self._timeout,
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=True,
        )
        return self._session

    async def post_json(self, url: str, headers: dict[str, str], body: Any) -> HttpReply:
        session = self._session or self._open()
        data = dumps(body)
        try:
            async with session.post(
                url, data=data, headers=headers, allow_redirects=False, proxy=self._proxy
            ) as response:
                content = await response.read()
                return HttpReply(response.status, content, response.headers)
        except TimeoutError:
            raise  # aiohttp's socket timeouts are TimeoutErrors: the caller words them
        except (self._aiohttp.ClientError, ValueError) as exc:  # ValueError: a URL aiohttp cannot use
            raise TransportError(str(exc)) from exc

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


class _Httpx:
    """`HttpClient` over plain httpx 0.28 (the comparison transport)."""

    def __init__(self, max_connections: int, connect_timeout: float, read_timeout: float, proxy: str | None):
        import httpx

        self._httpx = httpx
        limits = httpx.Limits(
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=30.0,
        )
        timeout = httpx.Timeout(connect=connect_timeout, read=read_timeout, write=read_timeout, pool=None)
        transport = httpx.AsyncHTTPTransport(
            limits=limits, trust_env=False, proxy=httpx.Proxy(proxy) if proxy else None
        )
        self._client: httpx.AsyncClient = httpx.AsyncClient(
            transport=transport, timeout=timeout, trust_env=False, follow_redirects=False
        )

    async def post_json(self, url: str, headers: dict[str, str], body: Any) -> HttpReply:
        try:
            response = await self._client.post(url, headers=headers, content=dumps(body))
        except self._httpx.TransportError as exc:
            timed_out = isinstance(exc, self._httpx.TimeoutException)
            raise TransportError(str(exc), timed_out=timed_out) from (exc.__cause__ or exc)
        return HttpReply(response.status_code, response.content, response.headers)

    async def aclose(self) -> None:
        await self._client.aclose()


def make_http_client(
    *,
    max_connections: int,
    connect_timeout: float,
    read_timeout: float,
    kind: TransportKind = "aiohttp",
    proxy: str | None = None,
) -> HttpClient:
    """An `HttpClient` with explicit limits; must be used on one event loop (created on first request).

    There is no pool timeout on purpose: callers bound concurrency with a semaphore no larger than the pool,
    so a request waits for a slot in the semaphore (not in the pool) and a long queue never times out there.
    Proxies come only from `proxy` (environment proxy variables are ignored, so local servers stay local).
    """
    if kind == "aiohttp":
        return _Aiohttp(max_connections, connect_timeout, read_timeout, proxy)
    if kind == "httpx":
        return _Httpx(max_connections, connect_timeout, read_timeout, proxy)
    raise ValueError(f"transport must be 'aiohttp' or 'httpx', got {kind!r}")
