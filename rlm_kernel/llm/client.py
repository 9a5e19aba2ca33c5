"""`LLMClient`: the public API — single, started and batched completions, budgets, fan-out events, closing.

Calls run on the layer's own event loop thread; the caller's thread only waits (an interrupt cancels them).
Where a call is answered is the broker's path (`llm.brokered`) or this process's (`llm.engine`: cache →
budget → retries → provider); `llm.completion` holds what a call is and returns. Over 400 lines because
the public methods and their caller-thread side (preparing items, waiting, warnings) belong together.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

import rlm_kernel.llm.event_loop as event_loop
from rlm_kernel.callscope import CallScope, current_scope
from rlm_kernel.cooperative import check_stopping, in_task, wait_any
from rlm_kernel.llm.brokered import BrokeredCalls
from rlm_kernel.llm.budget import Budget, current_budget
from rlm_kernel.llm.cache import ResponseCache
from rlm_kernel.llm.cache_io import CacheIO
from rlm_kernel.llm.completion import CallItem, Completion, Prompt, prompt_messages
from rlm_kernel.llm.config import LLMConfig, load_config
from rlm_kernel.llm.engine import LOOK_UP_AT_ITS_TURN, InProcessCalls
from rlm_kernel.llm.errors import (
    BatchError,
    LLMCancelled,
    LLMError,
)
from rlm_kernel.llm.events import CallEvent
from rlm_kernel.llm.pricing import check_price
from rlm_kernel.llm.providers import ChatRequest, get_wire
from rlm_kernel.llm.redact import install_log_redaction, redact
from rlm_kernel.llm.retry import CoolDown, RetryPolicy
from rlm_kernel.llm.session import LLMSession, current_session
from rlm_kernel.llm.tiers import ROLES, estimate_tokens, resolve_model
from rlm_kernel.llm.transport import HttpClient, TransportKind

__all__ = [
    "Completion",
    "LLMClient",
    "PendingCompletion",
    "Prompt",
    "cancel_all",
    "get_client",
]

cancel_all = event_loop.cancel_all


def _result(fut: concurrent.futures.Future[Any]) -> Any:
    """`fut.result()`, waking every 0.2 s so signal handlers (interrupts, cell time limits) run promptly.

    In a cooperative task (a sub-RLM of `rlm_query_batched`) the wait lets the other tasks run meanwhile
    (`cooperative.wait_any`); elsewhere it blocks the calling thread as before."""
    if in_task():
        while not fut.done():
            wait_any((fut,), None)
        return fut.result()
    while True:
        try:
            return fut.result(timeout=0.2)
        except TimeoutError:
            if fut.done():
                raise


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


class LLMClient(BrokeredCalls, InProcessCalls):
    """Completions against one configured provider; thread-safe; one per session is usual (`get_client()`).

    `transport` picks the HTTP transport ("aiohttp" default, "httpx" for comparison).
    """

    def __init__(
        self,
        config: LLMConfig | None = None,
        *,
        transport: TransportKind = "aiohttp",
        session: LLMSession | None = None,
    ) -> None:
        install_log_redaction()
        session = session or current_session()
        self.config = config if config is not None else load_config(session=session)
        self._transport: TransportKind = transport
        self._wire = get_wire(self.config.provider)
        self._base_url = self.config.base_url
        self._base_lock = threading.Lock()
        # inside a kernel started by `python -m rlm_kernel`, the broker process makes the calls (and holds the
        # keys, the HTTP client and the cache); elsewhere (a script, the broker itself) this client does
        self._session = session
        self._broker = session.link
        self._bus = session.bus
        self._engine: tuple[int, int] | None = None  # (broker generation, engine id) once registered
        self.cache: ResponseCache | None = (
            None
            if self._broker is not None
            else ResponseCache(Path(self.config.cache_dir), self.config.cache)
        )
        self._cache_io: CacheIO | None = None  # cache reads/writes on worker threads (made on first use)
        self._unrecorded: list[str] = []  # why answers went unrecorded (reported in the caller's thread)
        self._policy = RetryPolicy(self.config.max_retries, self.config.retry_after_cap)
        self._http: HttpClient | None = None
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
        check_stopping()
        coro = self._single(item, budget)
        if event_loop.in_loop_thread():
            coro.close()
            raise LLMError("model calls cannot be made from the LLM layer's own event loop thread")
        return PendingCompletion(self, event_loop.submit(coro), item)

    def _single(self, item: CallItem, budget: Budget | None) -> Any:
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

    def _warn_unpriced(self, items: Sequence[CallItem], results: Sequence[Completion | None]) -> None:
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
    ) -> CallItem:
        if self._closed:
            raise LLMError("this LLM client is closed; use get_client() for a fresh one")
        if role not in ROLES:
            raise LLMError(f"role must be 'map' or 'synthesis', got {role!r}")
        messages = prompt_messages(prompt, system)
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
        return CallItem(index, req, tier, est)

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
            check_stopping()  # a stopped sub-RLM unwinding sends nothing more
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

    async def _batch(
        self,
        items: list[CallItem],
        budget: Budget,
        limit: int,
        label: str | None,
        parent_batch_id: str | None,
        owner: str | None,
        run: str | None = None,
    ) -> tuple[list[Completion | None], dict[int, str]]:
        batch_id = uuid.uuid4().hex[:12]
        t0 = time.monotonic()
        self._bus.emit(
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
        pending = iter(items)  # shared by the workers: each item is taken once, in order
        looked_up: list[Any] = [LOOK_UP_AT_ITS_TURN] * len(items)

        async def worker() -> None:
            # `limit` workers taking items in turn (not a task per item queued on a semaphore; see the broker)
            for item in pending:
                try:
                    results[item.index] = await self._call(
                        item, budget, batch_id, parent_batch_id, owner, looked_up=looked_up[item.index]
                    )
                except LLMError as exc:
                    errors[item.index] = str(exc)

        try:
            if self._broker is not None:  # one frame for the whole fan-out; the broker runs the items
                results, failures = await self._brokered(
                    items, budget, limit, batch_id, parent_batch_id, owner, run
                )
                errors.update({i: str(e) for i, e in failures.items()})
            else:
                if self.config.cache != "off" and len(items) > 1:  # one lookup for all (as the broker)
                    looked_up = await self.lookup_many_here([item.request for item in items])
                await asyncio.gather(*(worker() for _ in range(min(limit, len(items)))))
        finally:
            done = sum(r is not None for r in results)
            self._bus.emit(
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
        item: CallItem,
        budget: Budget,
        batch_id: str | None,
        parent_batch_id: str | None,
        owner: str | None,
        run: str | None = None,
        *,
        looked_up: Any = LOOK_UP_AT_ITS_TURN,
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
            self._bus.emit(
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
            return await self._call_inner(item, budget, event, t0, looked_up)
        finally:
            self._inflight -= 1


def _run_id(scope: CallScope) -> str | None:
    """The run named in a request's scope (an opaque id: the broker counts by it, never holds the run)."""
    return None if scope.run is None else f"run-{id(scope.run):x}"


# ---- the session's default client
def get_client(session: LLMSession | None = None) -> LLMClient:
    """The session's default client (the current session unless given), built from its configuration;
    rebuilt after `%rlm set` changes settings (the old one closes once its calls finish)."""
    s = session or current_session()
    with s.lock:
        version = s.settings_version
        old = s.client
        if old is None or version != s.client_version:
            s.client = LLMClient(load_config(session=s), session=s)
            s.client_version = version
            if old is not None:
                old.retire()
        return s.client


_live: weakref.WeakSet[LLMClient] = weakref.WeakSet()


def _close_all_at_exit() -> None:
    """Close every client still open when the interpreter exits (no "unclosed session" noise)."""
    for client in list(_live):
        if client._http is not None:  # noqa: SLF001 - our own class
            client.close()


atexit.register(_close_all_at_exit)
