"""The broker call path: a fan-out goes to the broker process as one `batch` frame with its call scope.

The broker's ledger decides and settles each item; the kernel's budgets mirror every reservation and
settlement from the frames that come back (also those arriving after a cancel), and the events are emitted
here as the frames arrive. The methods run on the LLM layer's loop thread.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from rlm_kernel.llm.broker_link import BrokerLink
from rlm_kernel.llm.broker_protocol import chain_to_wire, error_from_wire, response_from_wire, scope_ids
from rlm_kernel.llm.budget import Budget, Reservation
from rlm_kernel.llm.cache import cache_key
from rlm_kernel.llm.completion import CallItem, Completion, completion_of
from rlm_kernel.llm.config import LLMConfig
from rlm_kernel.llm.errors import (
    BudgetExceeded,
    LLMCancelled,
    LLMError,
)
from rlm_kernel.llm.event_bus import EventBus
from rlm_kernel.llm.events import CANCELLED, CallEvent
from rlm_kernel.llm.transport import TransportKind

__all__ = ["BrokeredCalls"]


class BrokeredCalls:
    """`LLMClient`'s broker path (a mixin: the client's `__init__` sets these attributes)."""

    config: LLMConfig
    _broker: BrokerLink | None
    _engine: tuple[int, int] | None
    _bus: EventBus
    _unrecorded: list[str]
    _inflight: int
    _transport: TransportKind

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

    async def _engine_id(self) -> int:
        assert self._broker is not None
        generation = self._broker.generation
        if self._engine is None or self._engine[0] != generation:
            eid = await self._broker.register_engine(self.engine_fields())
            self._engine = (self._broker.generation, eid)
        return self._engine[1]

    async def _brokered(
        self,
        items: list[CallItem],
        budget: Budget,
        limit: int,
        batch_id: str | None,
        parent_batch_id: str | None,
        owner: str | None,
        run: str | None,
    ) -> tuple[list[Completion | None], dict[int, LLMError]]:
        """Items through the broker as one `batch` frame with the call scope; the broker's ledger decides
        and settles; `budget` mirrors each reservation and settlement (also those arriving after a cancel)."""
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
            self._bus.emit(
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
                    if isinstance(msg.get("charge"), list):  # sent but unanswered: the broker charged it
                        inp, out, usd = msg["charge"]
                        res = res or budget.reserve(int(inp), int(out), usd, check=False)
                        budget.settle(res, int(inp), int(out), usd)
                    elif res is not None:
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
                    results[i] = completion_of(resp, provider, items[i].tier, 0.0, cached=True, latency=0.0)
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
                results[i] = completion_of(resp, provider, items[i].tier, usd, cached=False, latency=latency)
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
