"""`LLMClient`: single and batched completions through cache → budget → retries → provider, with events.

Calls run on the layer's own event loop thread; the caller's thread only waits (an interrupt cancels them).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import socket
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlm_kernel.callscope import CallScope, current_scope
from rlm_kernel.llm import event_loop
from rlm_kernel.llm.budget import Budget, Reservation, current_budget
from rlm_kernel.llm.cache import CacheEntry, ResponseCache, cache_key
from rlm_kernel.llm.cache_io import BUSY, CacheIO
from rlm_kernel.llm.config import LLMConfig, load_config, settings_version
from rlm_kernel.llm.errors import (
    BatchError,
    BudgetExceeded,
    LLMCancelled,
    LLMError,
    NoProviderConfigured,
    ProviderBudgetExceeded,
    ProviderError,
    RateLimited,
)
from rlm_kernel.llm.events import CANCELLED, CallEvent, bus
from rlm_kernel.llm.pricing import check_price, cost_usd
from rlm_kernel.llm.providers import ChatRequest, ChatResponse, error_text, get_wire
from rlm_kernel.llm.providers.base import no_content_error
from rlm_kernel.llm.providers.gateway import budget_figures, classify_error, reported_cost
from rlm_kernel.llm.redact import install_log_redaction, redact
from rlm_kernel.llm.retry import CoolDown, RetryPolicy, backoff_delay, is_retryable_status, server_delay
from rlm_kernel.llm.tiers import ROLES, estimate_tokens, resolve_model
from rlm_kernel.llm.transport import TransportKind, make_http_client

if TYPE_CHECKING:  # httpx is imported with the first HTTP client (see transport.py), not at kernel start
    import httpx

__all__ = [
    "Completion",
    "LLMClient",
    "PendingCompletion",
    "Prompt",
    "cancel_all",
    "get_client",
    "reset_client",
]

Prompt = str | Sequence[dict[str, str]]
log = logging.getLogger("rlm_kernel.llm")
_ROLES_OK = ("system", "user", "assistant")
cancel_all = event_loop.cancel_all


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


@dataclass
class _Item:
    index: int
    request: ChatRequest
    tier: str | None
    est_input: int


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


def _result(fut: concurrent.futures.Future[Any]) -> Any:
    """`fut.result()`, waking every 0.2 s so signal handlers (interrupts, cell time limits) run promptly."""
    while True:
        try:
            return fut.result(timeout=0.2)
        except TimeoutError:
            if fut.done():
                raise


def _dns_failure(exc: BaseException) -> socket.gaierror | None:
    """The resolver's error behind a failed connection (aiohttp's and httpx's wrap it), or None."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, socket.gaierror):
            return e
        todo += [e.__cause__, e.__context__, getattr(e, "os_error", None)]
    return None


class PendingCompletion:
    """A call started by `LLMClient.start`: `done()`, `result()` (waits; errors as `complete()` raises them),
    `cancel()`; `future` is for `concurrent.futures.wait` over several."""

    def __init__(self, client: LLMClient, future: concurrent.futures.Future[Any], item: Any = None) -> None:
        self._client = client
        self.future = future
        self._item = item

    def done(self) -> bool:
        return self.future.done()

    def result(self) -> Completion:
        try:
            completion = self._client._wait(self.future)
        finally:
            self._client._warn_unrecorded()
        if self._item is not None:
            self._client._warn_unpriced([self._item], [completion])
        return completion

    def cancel(self) -> None:
        event_loop.cancel(self.future)


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
        try:
            completion = self._run(self._single(item, budget))
        finally:
            self._warn_unrecorded()
        self._warn_unpriced([item], [completion])
        return completion

    def start(
        self,
        prompt: Prompt,
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        system: str | None = None,
        role: str = "map",
        budget: Budget | None = None,
    ) -> PendingCompletion:
        """`complete()` without the wait: the call starts on the LLM loop now; `.result()` waits for it.

        Lets one thread overlap several calls whose prompts depend on earlier answers (the sub-RLMs of
        `rlm_query_batched`): nothing but the HTTP call leaves the caller's thread.
        """
        item = self._item(0, prompt, model, max_tokens, system, None, None, role)
        coro = self._single(item, budget)
        if event_loop.in_loop_thread():
            coro.close()
            raise LLMError("model calls cannot be made from the LLM layer's own event loop thread")
        return PendingCompletion(self, event_loop.submit(coro), item)

    def _single(self, item: _Item, budget: Budget | None) -> Any:
        """The coroutine of one call, with the call scope read here, in the caller's thread (it travels with
        the request): the budget is the run's scope's unless one is given, else the session's; inside an item
        of a fan-out (e.g. one sub-RLM of rlm_query_batched) the call names that fan-out."""
        scope = current_scope()
        chosen = budget if budget is not None else current_budget()
        return self._call(
            item,
            chosen,
            batch_id=None,
            parent_batch_id=scope.parent_batch_id,
            owner=scope.owner,
            run=_run_id(scope),
        )

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
        scope = current_scope()  # read here, in the caller's thread: it travels with the request
        chosen = budget if budget is not None else current_budget()  # a run's scope, else the session
        if parent_batch_id is None:
            parent_batch_id = scope.parent_batch_id
        try:
            results, errors = self._run(
                self._batch(items, chosen, limit, batch_label, parent_batch_id, scope.owner, _run_id(scope))
            )
        finally:
            self._warn_unrecorded()
        self._warn_unpriced(items, results)
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

    def _warn_unpriced(self, items: Sequence[_Item], results: Sequence[Completion | None]) -> None:
        """Warn (in the caller's thread, once per model) about models without a price that answered calls
        really sent; cache hits cost nothing, so a replayed notebook prints no price warning."""
        pairs = zip(items, results, strict=True)
        sent = {item.request.model for item, c in pairs if c is not None and not c.cached}
        for name in sorted(sent):
            check_price(name, self.config.prices, stacklevel=3)

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
        event_loop.run_on_loop(self._aclose_when_idle())

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
                event_loop.run_on_loop(http.aclose()).result(5)
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
        if event_loop.in_loop_thread():
            coro.close()
            raise LLMError(
                "model calls cannot be made from the LLM layer's own event loop thread "
                "(e.g. from an event subscriber)"
            )
        fut: concurrent.futures.Future[Any] | None = None
        try:
            fut = event_loop.submit(coro)
            return self._wait(fut)
        except BaseException:
            if fut is None:
                coro.close()
            raise

    def _wait(self, fut: concurrent.futures.Future[Any]) -> Any:
        """Wait for a call started on the LLM loop; whatever interrupts the wait cancels it."""
        try:
            return _result(fut)
        except concurrent.futures.CancelledError:
            raise LLMCancelled("model calls were cancelled (kernel interrupt or cancel_all())") from None
        except LLMError as exc:
            raise _strip(exc) from None
        except BaseException as exc:
            if not fut.done():  # KeyboardInterrupt, a cell time limit...: stop this cell's calls, re-raise
                event_loop.cancel(fut)
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
        run: str | None = None,
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
            if self._broker is not None:  # one frame for the whole fan-out; the broker runs the items
                results, failures = await self._brokered(
                    items, budget, limit, batch_id, parent_batch_id, owner, run
                )
                errors.update({i: str(e) for i, e in failures.items()})
            else:
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
        run: str | None = None,
    ) -> Completion:
        if self._broker is not None:  # a batch of one through the broker (its ledger reserves and settles)
            results, failures = await self._brokered([item], budget, 1, batch_id, parent_batch_id, owner, run)
            if failures:
                raise failures[0]
            completion = results[0]
            assert completion is not None
            return completion
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
        key = cache_key(provider, req)  # named in the events: provenance (rlm/provenance.py) records it
        try:
            hit = await self._lookup(req)  # this process makes its own calls (no broker, or is the broker)
            if hit is not None:
                r, recorded_at = hit
                budget.record_cached()
                event(
                    "cached",
                    input_tokens=r.input_tokens,
                    output_tokens=r.output_tokens,
                    extra={"recorded_at": recorded_at, "cache_key": key},
                )
                return self._completion(r, provider, item.tier, 0.0, cached=True, latency=0.0)
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
        return self._completion(resp, provider, item.tier, usd, cached=False, latency=latency)

    async def _brokered(
        self,
        items: list[_Item],
        budget: Budget,
        limit: int,
        batch_id: str | None,
        parent_batch_id: str | None,
        owner: str | None,
        run: str | None,
    ) -> tuple[list[Completion | None], dict[int, LLMError]]:
        """Items through the broker as one `batch` frame with the call scope; the broker's ledger decides
        and settles; `budget` mirrors each reservation and settlement (also those arriving after a cancel)."""
        from rlm_kernel.broker.ledger import chain_to_wire, scope_ids
        from rlm_kernel.broker.link import error_from_wire
        from rlm_kernel.broker.protocol import response_from_wire

        assert self._broker is not None
        provider = self.config.provider
        depth = budget.depth
        results: list[Completion | None] = [None] * len(items)
        errors: dict[int, LLMError] = {}
        reserved: dict[int, Reservation] = {}
        started: dict[int, float] = {}
        call_ids = [uuid.uuid4().hex[:12] for _ in items]
        t0 = time.monotonic()
        names = scope_ids(budget)

        live = [
            True
        ]  # after a cancel, late frames only settle the budget: the call already showed as cancelled

        def emit(i: int, kind: str, **fields: Any) -> None:
            if not live[0]:
                return
            item = items[i]
            bus.emit(
                CallEvent(
                    kind,  # type: ignore[arg-type]
                    call_id=call_ids[i],
                    batch_id=batch_id,
                    parent_batch_id=parent_batch_id,
                    owner=owner,
                    index=i if batch_id else None,
                    tier=item.tier,
                    model=item.request.model,
                    provider=provider,
                    depth=depth,
                    time=time.time(),
                    **fields,
                )
            )

        def fail(i: int, err: LLMError) -> None:
            errors[i] = err
            emit(i, "failed", error=str(err), latency_s=time.monotonic() - started.get(i, t0))

        def on_frame(msg: dict[str, Any]) -> None:
            if "event" in msg:
                i, kind, fields = int(msg["index"]), str(msg["event"]), dict(msg.get("fields") or {})
                if kind == "start":
                    inp, out, usd = fields.pop("reserved")
                    reserved[i] = budget.reserve(int(inp), int(out), usd, check=False)
                    started[i] = time.monotonic()
                emit(i, kind, **fields)
            elif "item" in msg:
                i = int(msg["item"])
                if "error" in msg:
                    err = error_from_wire(msg["error"])
                    res = reserved.pop(i, None)
                    if res is not None:
                        budget.release(res)
                    if isinstance(err, BudgetExceeded):
                        names.get(msg["error"].get("scope"), budget).record_refused()
                    fail(i, err)
                    return
                resp = response_from_wire(msg["response"])
                if msg.get("cached") is not None:
                    budget.record_cached()
                    emit(
                        i,
                        "cached",
                        input_tokens=resp.input_tokens,
                        output_tokens=resp.output_tokens,
                        extra={
                            "recorded_at": msg["cached"],
                            "cache_key": cache_key(provider, items[i].request),
                        },
                    )
                    results[i] = self._completion(
                        resp, provider, items[i].tier, 0.0, cached=True, latency=0.0
                    )
                    return
                inp, out, usd = msg["charge"]
                res = reserved.pop(i, None) or budget.reserve(int(inp), int(out), usd, check=False)
                budget.settle(res, int(inp), int(out), usd)
                if msg.get("unrecorded"):
                    self._unrecorded.append(str(msg["unrecorded"]))
                latency = time.monotonic() - started.get(i, t0)
                emit(
                    i,
                    "finish",
                    input_tokens=resp.input_tokens,
                    output_tokens=resp.output_tokens,
                    cost_usd=usd or 0.0,
                    latency_s=latency,
                    extra={
                        "finish_reason": resp.finish_reason,
                        "cache_key": cache_key(provider, items[i].request),
                    },
                )
                results[i] = self._completion(
                    resp, provider, items[i].tier, usd, cached=False, latency=latency
                )
            else:  # the final frame (done, cancelled, a failed batch, or the broker lost): nothing more comes
                for res in reserved.values():
                    budget.release(res)
                reserved.clear()
                if "error" in msg or "lost" in msg or msg.get("cancelled"):
                    why: LLMError = (
                        error_from_wire(msg["error"])
                        if "error" in msg
                        else LLMError(f"the LLM broker process exited during this call ({msg['lost']})")
                        if "lost" in msg
                        else LLMCancelled(CANCELLED)
                    )
                    for i in range(len(items)):
                        if results[i] is None and i not in errors:
                            fail(i, why)

        scope = {
            "budgets": chain_to_wire(budget),
            "owner": owner,
            "batch_id": batch_id,
            "parent_batch_id": parent_batch_id,
            "run": run,
        }
        self._inflight += 1
        try:
            engine = await self._engine_id()
            await self._broker.batch(engine, [it.request for it in items], scope, limit, on_frame)
        except (
            asyncio.CancelledError
        ):  # an interrupt: the calls in flight end as cancelled now (as in-process)
            for i in list(reserved):
                fail(i, LLMCancelled(CANCELLED))
            live[0] = False
            raise
        except LLMError as exc:  # the batch as a whole failed (e.g. the broker died): every open item fails
            for i in range(len(items)):
                if results[i] is None and i not in errors:
                    errors[i] = exc
        finally:
            self._inflight -= 1
        return results, errors

    def _cost(self, model: str, resp: ChatResponse) -> float | None:
        """What a call cost: the figure a gateway reported with the reply, else our price table's."""
        if resp.cost_usd is not None:
            return resp.cost_usd
        return cost_usd(model, resp.input_tokens, resp.output_tokens, self.config.prices)

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
            dns = _dns_failure(exc)
            if dns is not None:  # a name that does not resolve: no server was ever asked
                text = (
                    f"the host name in {redact(base_url)} could not be resolved ({dns}): check the base URL "
                    "(`%rlm show`) and the network"
                )
                transient = getattr(dns, "errno", None) == socket.EAI_AGAIN  # the resolver, not the name
                return ProviderError(text, retryable=transient, provider=provider, model=model)
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
                extra={"delay_s": delay, "status": error.status},
            )
            log.info("retry %d of a %s call in %.2f s: %s", attempt + 1, provider, delay, error)
            await asyncio.sleep(delay)
            attempt += 1


def _run_id(scope: CallScope) -> str | None:
    """The run named in a request's scope (an opaque id: the broker counts by it, never holds the run)."""
    return None if scope.run is None else f"run-{id(scope.run):x}"


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
