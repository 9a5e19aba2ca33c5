"""`LLMClient`: single and batched completions through cache → budget → retries → provider, with events.

Calls run on the layer's own event loop thread; the caller's thread only waits (an interrupt cancels them).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlm_kernel.llm import loop
from rlm_kernel.llm.budget import Budget, current_budget
from rlm_kernel.llm.cache import CacheEntry, ResponseCache
from rlm_kernel.llm.cache_io import BUSY, CacheIO
from rlm_kernel.llm.config import LLMConfig, load_config, settings_version
from rlm_kernel.llm.errors import (
    BatchError,
    LLMCancelled,
    LLMError,
    NoProviderConfigured,
    ProviderError,
)
from rlm_kernel.llm.events import CANCELLED, CallEvent, bus, current_batch, current_owner
from rlm_kernel.llm.pricing import check_price, cost_usd
from rlm_kernel.llm.providers import ChatRequest, ChatResponse, error_text, get_wire
from rlm_kernel.llm.providers.base import no_content_error
from rlm_kernel.llm.redact import install_log_redaction, redact
from rlm_kernel.llm.retry import CoolDown, RetryPolicy, backoff_delay, is_retryable_status
from rlm_kernel.llm.tiers import ROLES, estimate_tokens, resolve_model
from rlm_kernel.llm.transport import TransportKind, make_http_client

if TYPE_CHECKING:  # httpx is imported with the first HTTP client (see transport.py), not at kernel start
    import httpx

__all__ = ["Completion", "HandedOff", "LLMClient", "Prompt", "cancel_all", "get_client", "reset_client"]

Prompt = str | Sequence[dict[str, str]]
log = logging.getLogger("rlm_kernel.llm")
_ROLES_OK = ("system", "user", "assistant")
cancel_all = loop.cancel_all


@dataclass(frozen=True)
class Completion:
    """One model answer. `str(completion)` is its text. `cached` answers cost nothing (`cost_usd` 0).

    `cost_usd` is None when the model's price is unknown (tokens-only accounting).
    """

    text: str
    model: str
    provider: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    finish_reason: str | None
    request_id: str | None
    cached: bool = False
    tier: str | None = None
    latency_s: float = 0.0

    def __str__(self) -> str:
        return self.text


class HandedOff(asyncio.CancelledError):
    """A call cancelled after its request reached the broker: the broker's final word settles it later."""


@dataclass
class _Item:
    index: int
    request: ChatRequest
    tier: str | None
    est_input: int


_owner = current_owner  # the running cell's msg_id inside the kernel (None elsewhere)


def _messages(prompt: Prompt, system: str | None) -> tuple[dict[str, str], ...]:
    if isinstance(prompt, str):
        msgs = [{"role": "user", "content": prompt}]
    elif isinstance(prompt, Sequence) and not isinstance(prompt, bytes | bytearray):
        msgs = []
        for i, m in enumerate(prompt):
            if (
                not isinstance(m, dict)
                or m.get("role") not in _ROLES_OK
                or not isinstance(m.get("content"), str)
            ):
                raise LLMError(
                    f"prompt message {i} must be a dict with 'role' (system|user|assistant) and "
                    "'content' (str), "
                    f"got {type(m).__name__}"
                )
            msgs.append({"role": m["role"], "content": m["content"]})
        if not msgs:
            raise LLMError("prompt is an empty list of messages; give a string or at least one message")
    else:
        raise LLMError(f"prompt must be a string or a list of messages, got {type(prompt).__name__}")
    if system is not None:
        if not isinstance(system, str):
            raise LLMError(f"system must be a string, got {type(system).__name__}")
        msgs.insert(0, {"role": "system", "content": system})
    return tuple(msgs)


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


def _result(fut: concurrent.futures.Future[Any]) -> Any:
    """`fut.result()`, waking every 0.2 s so signal handlers (interrupts, cell time limits) run promptly."""
    while True:
        try:
            return fut.result(timeout=0.2)
        except TimeoutError:
            if fut.done():
                raise


def _strip(exc: BaseException) -> BaseException:
    """Detach chained exceptions and loop-thread frames: what reaches a cell carries its text only."""
    exc.__context__ = None
    exc.__cause__ = None
    exc.__suppress_context__ = True
    exc.__traceback__ = None
    return exc


class LLMClient:
    """Completions against one configured provider; thread-safe; one per session is usual (`get_client()`).

    `transport` picks the HTTP transport ("aiohttp" default, "httpx" for comparison).
    """

    def __init__(self, config: LLMConfig | None = None, *, transport: TransportKind = "aiohttp") -> None:
        install_log_redaction()
        self.config = config if config is not None else load_config()
        self._transport: TransportKind = transport
        self._wire = get_wire(self.config.provider)
        self._base_url = self.config.base_url
        self._base_lock = threading.Lock()
        # inside a kernel started by `python -m rlm_kernel`, the broker process makes the calls (and holds the
        # keys, the HTTP client and the cache); elsewhere (a script, the broker itself) this client does
        self._broker = _broker_link()
        self._engine: tuple[int, int] | None = None  # (broker generation, engine id) once registered
        self.cache: ResponseCache | None = (
            None
            if self._broker is not None
            else ResponseCache(Path(self.config.cache_dir), self.config.cache)
        )
        self._cache_io: CacheIO | None = None  # cache reads/writes on worker threads (made on first use)
        self._unrecorded: list[str] = []  # why answers went unrecorded (reported in the caller's thread)
        self._policy = RetryPolicy(self.config.max_retries, self.config.retry_after_cap)
        self._http: httpx.AsyncClient | None = None
        self._cooldown = CoolDown()
        self._closed = False
        self._inflight = 0  # calls running on the loop (touched only there)
        _live.add(self)

    def __repr__(self) -> str:
        url = redact(self._base_url) if self._base_url else None
        return (
            f"LLMClient(provider={self.config.provider!r}, base_url={url!r}, "
            f"models={self.config.models!r}, cache={self.config.cache!r})"
        )

    # ---- public API
    def complete(
        self,
        prompt: Prompt,
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        system: str | None = None,
        temperature: float | None = None,
        stop: str | Sequence[str] | None = None,
        role: str = "map",
        budget: Budget | None = None,
    ) -> Completion:
        """One completion. `model`: a tier (fast|balanced|powerful|auto, default auto) or a model name."""
        item = self._item(0, prompt, model, max_tokens, system, temperature, stop, role)
        chosen = budget if budget is not None else current_budget()  # a run's scope, else the session
        owner = _owner()
        # inside an item of a fan-out (e.g. one sub-RLM of rlm_query_batched) the call names that fan-out
        parent = current_batch()
        try:
            return self._run(self._call(item, chosen, batch_id=None, parent_batch_id=parent, owner=owner))
        finally:
            self._warn_unrecorded()

    def complete_batch(
        self,
        prompts: Sequence[Prompt],
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        system: str | None = None,
        temperature: float | None = None,
        stop: str | Sequence[str] | None = None,
        role: str = "map",
        budget: Budget | None = None,
        concurrency: int | None = None,
        batch_label: str | None = None,
        parent_batch_id: str | None = None,
    ) -> list[Completion]:
        """Completions for `prompts` in input order, run concurrently (at most `concurrency`).

        If any item fails: `BatchError` with `.results` (finished ones kept, None for failures) and `.errors`.
        `parent_batch_id` defaults to the fan-out whose item is running (`events.current_batch()`), so a
        sub-RLM's fan-outs nest under the fan-out of sub-RLMs that started it.
        """
        if isinstance(prompts, str):
            raise LLMError("complete_batch takes a list of prompts; for one prompt use complete()")
        items = []
        for i, p in enumerate(prompts):
            try:
                items.append(self._item(i, p, model, max_tokens, system, temperature, stop, role))
            except LLMError as exc:
                raise type(exc)(f"prompt {i}: {exc}") from None
        limit = self.config.concurrency if concurrency is None else concurrency
        if not isinstance(limit, int) or limit < 1:
            raise LLMError(f"concurrency must be a whole number ≥ 1, got {limit!r}")
        chosen = budget if budget is not None else current_budget()  # a run's scope, else the session
        owner = _owner()
        if parent_batch_id is None:
            parent_batch_id = current_batch()
        try:
            results, errors = self._run(
                self._batch(items, chosen, limit, batch_label, parent_batch_id, owner)
            )
        finally:
            self._warn_unrecorded()
        if errors:
            first = min(errors)
            failed = len(errors)
            raise BatchError(
                f"{failed} of {len(items)} calls failed (first: item {first}: {errors[first]}); "
                "the other results are in .results",
                results=results,
                errors=errors,
            ) from None
        return results

    def _warn_unrecorded(self) -> None:
        """Warn (in the caller's thread, so the cell shows it) about answers the cache could not record."""
        reasons, self._unrecorded = self._unrecorded, []
        if reasons:
            warnings.warn(
                f"{len(reasons)} model answer(s) were returned but not recorded in the LLM cache "
                f"(first reason: {reasons[0]}); they will be paid for again on a re-run",
                RuntimeWarning,
                stacklevel=3,
            )

    def engine_fields(self) -> dict[str, Any]:
        """What the broker needs to make this client's calls (the key only as what the kernel holds)."""
        c = self.config
        return {
            "provider": c.provider,
            "base_url": c.base_url,
            "proxy": c.proxy,
            "api_key": c.api_key_for_request(),
            "concurrency": c.concurrency,
            "max_connections": c.max_connections,
            "max_retries": c.max_retries,
            "timeout": c.timeout,
            "connect_timeout": c.connect_timeout,
            "retry_after_cap": c.retry_after_cap,
            "cache": c.cache,
            "cache_dir": str(Path(c.cache_dir).expanduser().resolve()),
            "prices": {k: list(v) for k, v in c.prices.items()},
            "transport": self._transport,
        }

    def retire(self) -> None:
        """Stop taking calls and close once the calls already running have finished (does not block)."""
        self._closed = True
        loop.run_on_loop(self._aclose_when_idle())

    async def _aclose_when_idle(self) -> None:
        while self._inflight:
            await asyncio.sleep(0.1)
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()
        self._drop_engine()
        if self._cache_io is not None:
            self._cache_io.close()
        if self.cache is not None:
            self.cache.close()

    def close(self) -> None:
        """Close the HTTP connections and the cache (the client cannot be used afterwards)."""
        self._closed = True
        http, self._http = self._http, None
        if http is not None:
            try:
                loop.run_on_loop(http.aclose()).result(5)
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        self._drop_engine()
        if self._cache_io is not None:
            self._cache_io.close()
        if self.cache is not None:
            self.cache.close()

    def _drop_engine(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None and self._broker is not None:
            self._broker.drop_engine(*engine)

    # ---- preparation (caller's thread)
    def _item(
        self,
        index: int,
        prompt: Prompt,
        model: str | None,
        max_tokens: int | None,
        system: str | None,
        temperature: float | None,
        stop: str | Sequence[str] | None,
        role: str,
    ) -> _Item:
        if self._closed:
            raise LLMError("this LLM client is closed; use get_client() for a fresh one")
        if role not in ROLES:
            raise LLMError(f"role must be 'map' or 'synthesis', got {role!r}")
        messages = _messages(prompt, system)
        est = sum(estimate_tokens(m["content"]) + 4 for m in messages)
        tier, name = resolve_model(model, role=role, prompt_tokens=est, config=self.config)
        mt = self.config.max_tokens if max_tokens is None else max_tokens
        if not isinstance(mt, int) or isinstance(mt, bool) or mt < 1:
            raise LLMError(f"max_tokens must be a whole number ≥ 1, got {mt!r}")
        temp = self.config.temperature if temperature is None else float(temperature)
        stops: tuple[str, ...] = ()
        if stop is not None:
            stops = (stop,) if isinstance(stop, str) else tuple(str(s) for s in stop)
        req = ChatRequest(model=name, messages=messages, max_tokens=mt, temperature=temp, stop=stops)
        check_price(name, self.config.prices, stacklevel=3)  # warns in the caller's thread, once per model
        return _Item(index, req, tier, est)

    def _ensure_base_url(self) -> str:
        if self._base_url:
            return self._base_url
        with self._base_lock:
            if self._base_url:
                return self._base_url
            from rlm_kernel.llm.local import ensure_local_server  # imports llm.config: not at the top

            try:
                self._base_url = ensure_local_server()
            except Exception as exc:  # noqa: BLE001 - LocalModelError and start failures, as text
                raise NoProviderConfigured(redact(exc), key="provider") from None
            return self._base_url

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run `coro` on the LLM loop and wait for it; whatever interrupts the wait cancels it."""
        if loop.in_loop_thread():
            coro.close()
            raise LLMError(
                "model calls cannot be made from the LLM layer's own event loop thread "
                "(e.g. from an event subscriber)"
            )
        fut: concurrent.futures.Future[Any] | None = None
        try:
            fut = loop.submit(coro)
            return _result(fut)
        except concurrent.futures.CancelledError:
            raise LLMCancelled("model calls were cancelled (kernel interrupt or cancel_all())") from None
        except LLMError as exc:
            raise _strip(exc) from None
        except BaseException as exc:
            if fut is None:
                coro.close()
                raise
            if not fut.done():  # KeyboardInterrupt, a cell time limit...: stop this cell's calls, re-raise
                loop.cancel(fut)
                concurrent.futures.wait([fut], timeout=1.0)  # let budgets and events settle first
                raise
            if isinstance(exc, Exception):
                message = f"internal error in the LLM layer: {type(exc).__name__}: {redact(exc)}"
                raise LLMError(message) from None
            raise

    # ---- the event loop side
    def _client(self) -> httpx.AsyncClient:
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

    async def _batch(
        self,
        items: list[_Item],
        budget: Budget,
        limit: int,
        label: str | None,
        parent_batch_id: str | None,
        owner: str | None,
    ) -> tuple[list[Completion | None], dict[int, str]]:
        batch_id = uuid.uuid4().hex[:12]
        t0 = time.monotonic()
        bus.emit(
            CallEvent(
                "batch_start",
                batch_id=batch_id,
                parent_batch_id=parent_batch_id,
                owner=owner,
                total=len(items),
                provider=self.config.provider,
                depth=budget.depth,
                time=time.time(),
                extra={"label": label, "concurrency": limit},
            )
        )
        results: list[Completion | None] = [None] * len(items)
        errors: dict[int, str] = {}
        sem = asyncio.Semaphore(limit)

        async def one(item: _Item) -> None:
            async with sem:
                try:
                    results[item.index] = await self._call(item, budget, batch_id, parent_batch_id, owner)
                except LLMError as exc:
                    errors[item.index] = str(exc)

        try:
            await asyncio.gather(*(one(item) for item in items))
        finally:
            done = sum(r is not None for r in results)
            bus.emit(
                CallEvent(
                    "batch_end",
                    batch_id=batch_id,
                    parent_batch_id=parent_batch_id,
                    owner=owner,
                    total=len(items),
                    provider=self.config.provider,
                    input_tokens=sum(r.input_tokens for r in results if r),
                    output_tokens=sum(r.output_tokens for r in results if r),
                    cost_usd=sum(r.cost_usd or 0.0 for r in results if r),
                    latency_s=time.monotonic() - t0,
                    depth=budget.depth,
                    time=time.time(),
                    extra={"label": label, "ok": done, "failed": len(errors)},
                )
            )
        return results, errors

    async def _call(
        self,
        item: _Item,
        budget: Budget,
        batch_id: str | None,
        parent_batch_id: str | None,
        owner: str | None,
    ) -> Completion:
        req = item.request
        provider = self.config.provider
        call_id = uuid.uuid4().hex[:12]

        def event(kind: str, **fields: Any) -> None:
            bus.emit(
                CallEvent(
                    kind,  # type: ignore[arg-type]
                    call_id=call_id,
                    batch_id=batch_id,
                    parent_batch_id=parent_batch_id,
                    owner=owner,
                    index=item.index if batch_id else None,
                    tier=item.tier,
                    model=req.model,
                    provider=provider,
                    depth=budget.depth,
                    time=time.time(),
                    **fields,
                )
            )

        t0 = time.monotonic()
        self._inflight += 1
        try:
            return await self._call_inner(item, budget, event, t0)
        finally:
            self._inflight -= 1

    async def _call_inner(self, item: _Item, budget: Budget, event: Any, t0: float) -> Completion:
        req = item.request
        provider = self.config.provider
        try:
            hit = await self._lookup(req)
            if hit is not None:
                r, recorded_at = hit
                budget.record_cached()
                event(
                    "cached",
                    input_tokens=r.input_tokens,
                    output_tokens=r.output_tokens,
                    extra={"recorded_at": recorded_at},
                )
                return self._completion(r, provider, item.tier, 0.0, cached=True, latency=0.0)
            est_usd = cost_usd(req.model, item.est_input, req.max_tokens, self.config.prices)
            reservation = budget.reserve(item.est_input, req.max_tokens, est_usd)
        except LLMError as exc:
            event("failed", error=str(exc))
            raise
        event("start", extra={"max_tokens": req.max_tokens})

        def late(answer: ChatResponse | None) -> None:
            """The broker's final word on a call cancelled in flight: an answer that arrived is paid for."""
            if answer is None:
                budget.release(reservation)
                return
            usd = cost_usd(req.model, answer.input_tokens, answer.output_tokens, self.config.prices)
            budget.settle(reservation, answer.input_tokens, answer.output_tokens, usd)

        try:
            resp, unrecorded = await self._fetch(req, event, late)
        except LLMError as exc:
            budget.release(reservation)
            event("failed", error=str(exc), latency_s=time.monotonic() - t0)
            raise
        except HandedOff:  # cancelled in the broker's hands: `late` settles or releases the reservation
            event("failed", error=CANCELLED, latency_s=time.monotonic() - t0)
            raise
        except BaseException:
            budget.release(reservation)
            event("failed", error=CANCELLED, latency_s=time.monotonic() - t0)
            raise
        if not resp.input_tokens and not resp.output_tokens:  # a server that reports no usage: estimate it
            resp = replace(resp, input_tokens=item.est_input, output_tokens=estimate_tokens(resp.text))
        usd = cost_usd(req.model, resp.input_tokens, resp.output_tokens, self.config.prices)
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
            extra={"finish_reason": resp.finish_reason},
        )
        return self._completion(resp, provider, item.tier, usd, cached=False, latency=latency)

    # ---- where a call is answered: the broker process, or this process (no broker, or inside the broker)
    async def _engine_id(self) -> int:
        assert self._broker is not None
        generation = self._broker.generation
        if self._engine is None or self._engine[0] != generation:
            eid = await self._broker.register_engine(self.engine_fields())
            self._engine = (self._broker.generation, eid)
        return self._engine[1]

    async def _lookup(self, req: ChatRequest) -> tuple[ChatResponse, str] | None:
        """A recorded answer (and when it was recorded) or None; raises `ReplayMiss` in replay mode."""
        if self.config.cache == "off":
            return None
        if self._broker is not None:
            return await self._broker.lookup(await self._engine_id(), req)
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

    async def _fetch(
        self, req: ChatRequest, event: Any, late: Callable[[ChatResponse | None], None] | None = None
    ) -> tuple[ChatResponse, str | None]:
        """The provider's answer, and why the cache could not record it (None: recorded or not asked).

        If this call is cancelled after its request reached the broker, the broker's final word (the answer,
        or None) goes to `late` later, and this raises `HandedOff` (a `CancelledError`)."""
        if self._broker is not None:
            return await self._broker.send(await self._engine_id(), req, event, late)
        return await self.fetch_here(req, event)

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

    @staticmethod
    def _completion(
        r: ChatResponse, provider: str, tier: str | None, usd: float | None, *, cached: bool, latency: float
    ) -> Completion:
        return Completion(
            text=r.text,
            model=r.model,
            provider=provider,
            input_tokens=r.input_tokens,
            output_tokens=r.output_tokens,
            cost_usd=usd,
            finish_reason=r.finish_reason,
            request_id=r.request_id,
            cached=cached,
            tier=tier,
            latency_s=latency,
        )

    def _transport_error(self, exc: BaseException, base_url: str, model: str) -> ProviderError:
        """A retryable, text-only error for a failed connection or a timeout (the cause decides which)."""
        import httpx

        provider = self.config.provider
        cause = exc.__cause__ if isinstance(exc, httpx.HTTPError) and exc.__cause__ is not None else exc
        timed_out = isinstance(cause, TimeoutError) or (
            cause is exc and isinstance(exc, httpx.TimeoutException)
        )
        if timed_out:
            text = (
                f"{provider} did not answer in time (connect timeout {self.config.connect_timeout:g} s, "
                f"read timeout {self.config.timeout:g} s, both together per attempt)"
            )
        else:
            detail = redact(cause) or "no detail"
            text = f"connection to {provider} at {redact(base_url)} failed: {type(cause).__name__}: {detail}"
        return ProviderError(text, retryable=True, timed_out=timed_out, provider=provider, model=model)

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
        return resp

    async def _local_crash(self, base_url: str) -> str | None:
        """After a failed connection to the offline model's server: its crash report if it died, else None.

        A crash also forgets the base URL, so the next call restarts the server
        (see `local.ensure_local_server`).
        """
        if self.config.provider != "local" or self.config.base_url:
            return None
        from rlm_kernel.llm.local import server_crash_report

        report = await asyncio.to_thread(server_crash_report, base_url)
        if report is not None:
            with self._base_lock:
                if self._base_url == base_url:
                    self._base_url = None
        return report

    async def _send(self, req: ChatRequest, event: Any) -> ChatResponse:
        provider = self.config.provider
        import httpx

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
                    response = await http.post(url, headers=headers, json=body)
            except (TimeoutError, httpx.TransportError, OSError) as exc:
                error = self._transport_error(exc, base_url, req.model)
                crash = await self._local_crash(base_url)
                if crash is not None:  # a dead offline server: no retry here, a restart on the next call
                    raise ProviderError(crash, retryable=False, provider=provider, model=req.model) from None
            else:
                status = response.status_code
                if 200 <= status < 300:
                    return self._parse(response.content, response.headers, req.model)
                retryable = is_retryable_status(status, response.headers)
                message = redact(error_text(response.content))
                error = ProviderError(
                    f"{provider} returned HTTP {status} for model {req.model!r}: {message}",
                    status=status,
                    retryable=retryable,
                    provider=provider,
                    model=req.model,
                )
                if retryable:
                    delay = self._policy.delay(attempt, response.headers)
                    if status == 429:
                        self._cooldown.push(delay)
            if not error.retryable or attempt >= self._policy.max_retries:
                tried = f" (after {attempt + 1} attempts)" if attempt else ""
                hint = _hint(error.status, error.retryable, error.timed_out)
                error.args = (f"{error.args[0]}{tried}{hint}",)
                raise error
            if delay is None:
                delay = backoff_delay(attempt)
            event(
                "retry",
                attempt=attempt + 1,
                error=str(error),
                extra={"delay_s": delay, "status": error.status},
            )
            log.info("retry %d of a %s call in %.2f s: %s", attempt + 1, provider, delay, error)
            await asyncio.sleep(delay)
            attempt += 1


def _broker_link() -> Any:
    """The kernel's link to its broker process, or None when this process makes its own calls."""
    from rlm_kernel.broker import link

    return link.current()


# ---- the session default client
_default_lock = threading.Lock()
_default: LLMClient | None = None
_default_version = -1


def get_client() -> LLMClient:
    """The session's default client, built from `load_config()`; rebuilt after `%rlm set` changes settings."""
    global _default, _default_version
    with _default_lock:
        version = settings_version()
        if _default is None or version != _default_version:
            old = _default
            _default = LLMClient(load_config())
            _default_version = version
            if old is not None:
                old.retire()
        return _default


def reset_client() -> None:
    """Drop the default client; the next `get_client()` re-reads the configuration (e.g. new env)."""
    global _default
    with _default_lock:
        old, _default = _default, None
    if old is not None:
        old.retire()


_live: weakref.WeakSet[LLMClient] = weakref.WeakSet()


def _close_all_at_exit() -> None:
    """Close every client still open when the interpreter exits (no "unclosed session" noise)."""
    global _default
    with _default_lock:
        _default = None
    for client in list(_live):
        if client._http is not None:  # noqa: SLF001 - our own class
            client.close()


atexit.register(_close_all_at_exit)
