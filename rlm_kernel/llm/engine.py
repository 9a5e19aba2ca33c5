"""The in-process call path: the response cache, HTTP with retries, what a provider's reply or failure means.

`LLMClient` takes this path when no broker makes its calls (a script, a kernel without a broker); the broker
process's engines are such clients. The methods run on the LLM layer's loop thread, except where they say.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from rlm_kernel.llm.budget import Budget
from rlm_kernel.llm.cache import CacheEntry, ResponseCache, cache_key
from rlm_kernel.llm.cache_io import BUSY, CacheIO
from rlm_kernel.llm.completion import CallItem, Completion, completion_of
from rlm_kernel.llm.config import LLMConfig
from rlm_kernel.llm.errors import (
    LLMError,
    NoProviderConfigured,
    ProviderBudgetExceeded,
    ProviderError,
    RateLimited,
)
from rlm_kernel.llm.events import CANCELLED
from rlm_kernel.llm.pricing import cost_usd
from rlm_kernel.llm.providers import ChatRequest, ChatResponse, error_text
from rlm_kernel.llm.providers.base import no_content_error
from rlm_kernel.llm.providers.gateway import budget_figures, classify_error, reported_cost
from rlm_kernel.llm.redact import redact
from rlm_kernel.llm.retry import CoolDown, RetryPolicy, backoff_delay, is_retryable_status, server_delay
from rlm_kernel.llm.session import LLMSession
from rlm_kernel.llm.tiers import estimate_tokens
from rlm_kernel.llm.transport import HttpClient, TransportError, TransportKind, make_http_client

__all__ = ["LOOK_UP_AT_ITS_TURN", "InProcessCalls"]

LOOK_UP_AT_ITS_TURN = object()
"""`LLMClient.lookup_many_here`'s answer for a request that repeats an earlier one of the same fan-out."""
log = logging.getLogger("rlm_kernel.llm")


_BUDGET_HINT = (
    " — a budget kept by the provider or its gateway is spent: ask its admin to raise it, or wait for it to"
    " reset; retrying does not help"
)


def _hint(status: int | None, retryable: bool, timed_out: bool = False) -> str:
    """What to do about a failed call, by HTTP status (None: no connection, or `timed_out`: a timeout)."""
    if status in (401, 403):
        return " — check the API key (RLM_API_KEY or the provider's *_API_KEY) and its permissions"
    if status == 404:
        return " — check the model name and the base URL (`%rlm show`)"
    if status == 429:
        return " — rate limited: lower the concurrency (RLM_CONCURRENCY) or try again later"
    if status is not None and status >= 500:
        return " — the provider is failing; try again later"
    if status is None and retryable and timed_out:
        return " — the server is slow or overloaded: raise RLM_TIMEOUT, or check it is healthy"
    if status is None and retryable:
        return (
            " — nothing answered at that address: check the base URL (`%rlm show`) and that the server is "
            "running"
        )
    if status in (400, 413, 422):
        return " — the provider rejected this request (e.g. prompt too long, unsupported option)"
    return ""


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and every exception behind it (causes, contexts, aiohttp's `os_error`), each once."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__, getattr(e, "os_error", None)]


def _dns_failure(exc: BaseException) -> socket.gaierror | None:
    """The resolver's error behind a failed connection (aiohttp's and httpx's wrap it), or None."""
    return next((e for e in _exception_chain(exc) if isinstance(e, socket.gaierror)), None)


_CONNECT_FAILURES = frozenset(
    {
        "ClientConnectorError",  # aiohttp: the connection was never made (refused, unreachable, DNS)
        "ClientConnectorDNSError",
        "ClientProxyConnectionError",
        "ClientConnectorCertificateError",
        "ClientConnectorSSLError",
        "ConnectionTimeoutError",  # aiohttp's connect timeout
        "ConnectError",  # httpx
        "ConnectTimeout",
    }
)


def _never_sent(exc: BaseException) -> bool:
    """Whether a failed attempt never reached the server (its connection was never made): then nothing can
    have been served or billed. A read timeout or a connection lost once the request was out may have been."""
    return any(
        isinstance(e, ConnectionRefusedError | socket.gaierror) or type(e).__name__ in _CONNECT_FAILURES
        for e in _exception_chain(exc)
    )


class InProcessCalls:
    """`LLMClient`'s in-process path (a mixin: the client's `__init__` sets these attributes)."""

    config: LLMConfig
    cache: ResponseCache | None
    _cache_io: CacheIO | None
    _wire: Any
    _base_url: str | None
    _base_lock: threading.Lock
    _http: HttpClient | None
    _transport: TransportKind
    _policy: RetryPolicy
    _cooldown: CoolDown
    _session: LLMSession
    _unrecorded: list[str]

    def _ensure_base_url(self) -> str:
        if self._base_url:
            return self._base_url
        with self._base_lock:
            if self._base_url:
                return self._base_url
            from rlm_kernel.llm.local import ensure_local_server  # imports llm.config: not at the top

            try:
                self._base_url = ensure_local_server(session=self._session)
            except Exception as exc:  # noqa: BLE001 - LocalModelError and start failures, as text
                raise NoProviderConfigured(redact(exc), key="provider") from None
            return self._base_url

    def _client(self) -> HttpClient:
        if self._http is None:
            pool = max(self.config.max_connections, self.config.concurrency)
            self._http = make_http_client(
                max_connections=pool,
                connect_timeout=self.config.connect_timeout,
                read_timeout=self.config.timeout,
                kind=self._transport,
                proxy=self.config.proxy,
            )
        return self._http

    async def _lookup(self, req: ChatRequest) -> tuple[ChatResponse, str] | None:
        """A recorded answer (and when it was recorded) or None; raises `ReplayMiss` in replay mode."""
        if self.config.cache == "off":
            return None
        return await self.lookup_here(req)

    async def lookup_here(self, req: ChatRequest) -> tuple[ChatResponse, str] | None:
        """`_lookup` in this process: SQLite on worker threads, never on the loop that drives HTTP; a cache
        locked too long counts as a miss (in replay mode, an error)."""
        cache = self.cache
        assert cache is not None
        if self._cache_io is None:
            self._cache_io = CacheIO(cache)
        entry = await self._cache_io.get(self.config.provider, req)
        if entry is BUSY:
            if cache.mode == "replay":
                raise LLMError(
                    f"replay mode: the LLM cache {cache.path} is locked (by another process?); try again"
                )
            return None
        if isinstance(entry, CacheEntry):
            return entry.response, entry.recorded_at
        if cache.mode == "replay":
            raise cache.miss_error(self.config.provider, req)
        return None

    async def lookup_many_here(self, reqs: list[ChatRequest]) -> list[Any]:
        """A fan-out's lookups in this process as one worker operation. Per request: a hit (response,
        recorded at), None (a miss: send it), `LOOK_UP_AT_ITS_TURN` (it repeats an earlier request of the
        fan-out, whose answer may be recorded by then) or the `LLMError` that item fails with (replay mode:
        a miss, or a locked cache). A cache locked too long makes every item a miss, as `lookup_here` does."""
        cache = self.cache
        assert cache is not None
        if self._cache_io is None:
            self._cache_io = CacheIO(cache)
        try:
            got = await self._cache_io.get_many(self.config.provider, reqs)
        except LLMError as exc:  # an unreadable cache: each item fails with it, as its own lookup would
            return [exc] * len(reqs)
        if got is BUSY:
            if cache.mode == "replay":
                busy = LLMError(
                    f"replay mode: the LLM cache {cache.path} is locked (by another process?); try again"
                )
                return [busy] * len(reqs)
            return [None] * len(reqs)
        found, repeats = got  # type: ignore[misc]
        out: list[Any] = []
        for i, req in enumerate(reqs):
            if i in repeats:
                out.append(LOOK_UP_AT_ITS_TURN)
            elif i in found:
                out.append((found[i].response, found[i].recorded_at))
            elif cache.mode == "replay":
                out.append(cache.miss_error(self.config.provider, req))
            else:
                out.append(None)
        return out

    async def fetch_here(self, req: ChatRequest, event: Any) -> tuple[ChatResponse, str | None]:
        """`_fetch` in this process: HTTP with retries, then the cache write on a worker thread (bounded)."""
        resp = await self._send(req, event)
        return resp, await self.record_here(req, resp)

    async def record_here(self, req: ChatRequest, resp: ChatResponse) -> str | None:
        """Record an answer in the cache (readwrite mode); None, or why it could not be recorded."""
        cache = self.cache
        if cache is None or cache.mode != "readwrite":
            return None
        if self._cache_io is None:
            self._cache_io = CacheIO(cache)
        reason = await self._cache_io.put(self.config.provider, req, resp)
        if reason is not None:
            log.warning("could not record a %s answer in the LLM cache: %s", self.config.provider, reason)
        return reason

    def _transport_error(self, exc: BaseException, base_url: str, model: str) -> ProviderError:
        """A retryable, text-only error for a failed connection or a timeout (the cause decides which)."""
        provider = self.config.provider
        cause = exc.__cause__ if isinstance(exc, TransportError) and exc.__cause__ is not None else exc
        timed_out = isinstance(cause, TimeoutError) or (isinstance(exc, TransportError) and exc.timed_out)
        if timed_out:
            text = (
                f"{provider} did not answer in time (connect timeout {self.config.connect_timeout:g} s, "
                f"read timeout {self.config.timeout:g} s, both together per attempt)"
            )
        else:
            detail = redact(cause) or "no detail"
            text = f"connection to {provider} at {redact(base_url)} failed: {type(cause).__name__}: {detail}"
            dns = _dns_failure(exc)
            if dns is not None:  # a name that does not resolve: no server was ever asked
                text = (
                    f"the host name in {redact(base_url)} could not be resolved ({dns}): check the base URL "
                    "(`%rlm show`) and the network"
                )
                transient = getattr(dns, "errno", None) == socket.EAI_AGAIN  # the resolver, not the name
                return ProviderError(text, retryable=transient, provider=provider, model=model)
        error = ProviderError(text, retryable=True, timed_out=timed_out, provider=provider, model=model)
        error.request_sent = not _never_sent(exc)
        return error

    def _parse(self, body: bytes, headers: Any, model: str) -> ChatResponse:
        """The wire format's reading of a 2xx reply; an odd reply or one without an answer fails this call."""
        provider = self.config.provider
        try:
            resp = self._wire.parse(body, headers, model)
        except ProviderError:
            raise
        except (Exception, MemoryError) as exc:  # noqa: BLE001 - whatever the reply holds, only this call fails
            raise ProviderError(
                f"{provider} returned a reply for model {model!r} that could not be read "
                f"({type(exc).__name__}: {redact(exc)})",
                retryable=False,
                provider=provider,
                model=model,
            ) from None
        if not isinstance(resp.text, str) or not resp.text:
            raise no_content_error(provider, model, resp.finish_reason)
        reported = reported_cost(headers)
        return resp if reported is None else replace(resp, cost_usd=reported)

    def _error(self, status: int, body: bytes, headers: Any, model: str) -> ProviderError:
        """The error for a non-2xx answer: a spent budget (never retried), a rate limit, or another."""
        provider = self.config.provider
        message = redact(error_text(body))
        kind = classify_error(status, body)
        if kind == "budget":
            spent, limit = budget_figures(message) or (0.0, 0.0)
            return ProviderBudgetExceeded(
                f"{provider} refused the call for model {model!r} — budget exceeded (HTTP {status}): "
                f"{message}",
                status=status,
                provider=provider,
                model=model,
                limit_value=limit,
                used=spent,
            )
        fields: dict[str, Any] = {
            "status": status,
            "retryable": is_retryable_status(status, headers),
            "provider": provider,
            "model": model,
        }
        if kind == "rate_limit":
            return RateLimited(
                f"{provider} rate-limited the call for model {model!r} (HTTP {status}): {message}",
                retry_after=server_delay(headers),
                **fields,
            )
        return ProviderError(f"{provider} returned HTTP {status} for model {model!r}: {message}", **fields)

    async def _local_crash(self, base_url: str) -> str | None:
        """After a failed connection to the offline model's server: its crash report if it died, else None.

        A crash also forgets the base URL, so the next call restarts the server
        (see `local.ensure_local_server`).
        """
        if self.config.provider != "local" or self.config.base_url:
            return None
        from rlm_kernel.llm.local import server_crash_report

        report = await asyncio.to_thread(server_crash_report, base_url, session=self._session)
        if report is not None:
            with self._base_lock:
                if self._base_url == base_url:
                    self._base_url = None
        return report

    async def _send(self, req: ChatRequest, event: Any) -> ChatResponse:
        provider = self.config.provider
        base_url = self._base_url or await asyncio.to_thread(self._ensure_base_url)
        http = self._client()
        attempt = 0
        while True:
            await self._cooldown.wait()
            url, headers, body = self._wire.build(req, base_url, self.config.api_key_for_request())
            delay: float | None = None
            error: ProviderError
            try:
                # a total deadline per attempt (connect + headers + whole body): a server that trickles its
                # reply a byte at a time cannot hold a call past it
                async with asyncio.timeout(self.config.connect_timeout + self.config.timeout):
                    response = await http.post_json(url, headers, body)
            except (TimeoutError, TransportError, OSError) as exc:
                error = self._transport_error(exc, base_url, req.model)
                crash = await self._local_crash(base_url)
                if crash is not None:  # a dead offline server: no retry here, a restart on the next call
                    raise ProviderError(crash, retryable=False, provider=provider, model=req.model) from None
            else:
                status = response.status
                if 200 <= status < 300:
                    try:
                        return self._parse(response.content, response.headers, req.model)
                    except ProviderError as exc:
                        exc.request_sent = True  # served (and billed) though unreadable or empty
                        raise
                error = self._error(status, response.content, response.headers, req.model)
                if error.retryable:
                    delay = self._policy.delay(attempt, response.headers)
                    if status == 429:
                        self._cooldown.push(delay)
            if not error.retryable or attempt >= self._policy.max_retries:
                tried = f" (after {attempt + 1} attempts)" if attempt else ""
                if isinstance(error, ProviderBudgetExceeded):
                    hint = _BUDGET_HINT
                else:
                    hint = _hint(error.status, error.retryable, error.timed_out)
                error.args = (f"{error.args[0]}{tried}{hint}",)
                raise error
            if delay is None:
                delay = backoff_delay(attempt)
            event(
                "retry",
                attempt=attempt + 1,
                error=str(error),
                extra={"delay_s": delay, "status": error.status, "sent": error.request_sent},
            )
            log.info("retry %d of a %s call in %.2f s: %s", attempt + 1, provider, delay, error)
            await asyncio.sleep(delay)
            attempt += 1

    async def _call_inner(
        self, item: CallItem, budget: Budget, event: Any, t0: float, looked_up: Any = LOOK_UP_AT_ITS_TURN
    ) -> Completion:
        req = item.request
        provider = self.config.provider
        key = cache_key(provider, req)  # named in the events: provenance (rlm/provenance.py) records it
        try:
            # this process makes its own calls (no broker, or is the broker); a fan-out looked its items up
            hit = await self._lookup(req) if looked_up is LOOK_UP_AT_ITS_TURN else looked_up
            if isinstance(hit, LLMError):
                raise hit
            if hit is not None:
                r, recorded_at = hit
                budget.record_cached()
                event(
                    "cached",
                    input_tokens=r.input_tokens,
                    output_tokens=r.output_tokens,
                    extra={"recorded_at": recorded_at, "cache_key": key},
                )
                return completion_of(r, provider, item.tier, 0.0, cached=True, latency=0.0)
            est_usd = cost_usd(req.model, item.est_input, req.max_tokens, self.config.prices)
            reservation = budget.reserve(item.est_input, req.max_tokens, est_usd)
        except LLMError as exc:
            event("failed", error=str(exc))
            raise
        event("start", extra={"max_tokens": req.max_tokens})

        try:
            resp, unrecorded = await self.fetch_here(req, event)
        except LLMError as exc:
            budget.release(reservation)
            event("failed", error=str(exc), latency_s=time.monotonic() - t0)
            raise
        except BaseException:
            budget.release(reservation)
            event("failed", error=CANCELLED, latency_s=time.monotonic() - t0)
            raise
        if not resp.input_tokens and not resp.output_tokens:  # a server that reports no usage: estimate it
            resp = replace(resp, input_tokens=item.est_input, output_tokens=estimate_tokens(resp.text))
        usd = self._cost(req.model, resp)
        budget.settle(reservation, resp.input_tokens, resp.output_tokens, usd)
        if unrecorded:
            self._unrecorded.append(unrecorded)
        latency = time.monotonic() - t0
        event(
            "finish",
            input_tokens=resp.input_tokens,
            output_tokens=resp.output_tokens,
            cost_usd=usd or 0.0,
            latency_s=latency,
            extra={"finish_reason": resp.finish_reason, "cache_key": key},
        )
        return completion_of(resp, provider, item.tier, usd, cached=False, latency=latency)

    def _cost(self, model: str, resp: ChatResponse) -> float | None:
        """What a call cost: the figure a gateway reported with the reply, else our price table's."""
        if resp.cost_usd is not None:
            return resp.cost_usd
        return cost_usd(model, resp.input_tokens, resp.output_tokens, self.config.prices)
