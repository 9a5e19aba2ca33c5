"""The broker process: holds the keys, the HTTP clients, the cache and a ledger of what was paid for.

Each request frame runs as its own task, so whatever goes wrong for one call (an odd reply, a MemoryError
while reading it, a failing cache write) becomes that call's error frame and nothing else. The broker exits
when its socket to the kernel closes.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from typing import Any

from rlm_kernel.broker.endpoints import Endpoint, EndpointPolicy
from rlm_kernel.broker.protocol import (
    encode,
    read_frame,
    request_from_wire,
    response_to_wire,
)
from rlm_kernel.llm.client import LLMClient
from rlm_kernel.llm.errors import (
    ConfigError,
    LLMError,
    ProviderBudgetExceeded,
    ProviderError,
    RateLimited,
    ReplayMiss,
)
from rlm_kernel.llm.redact import install_log_redaction, redact

__all__ = ["Broker", "error_frame", "run_broker"]


def error_frame(exc: BaseException) -> dict[str, Any]:
    """The wire form of a call's failure: its kind and text only (redacted: the broker knows the keys)."""
    if isinstance(exc, LLMError):
        kind = (
            "config"
            if isinstance(exc, ConfigError)
            else "provider_budget"
            if isinstance(exc, ProviderBudgetExceeded)
            else "rate_limited"
            if isinstance(exc, RateLimited)
            else "provider"
            if isinstance(exc, ProviderError)
            else "replay_miss"
            if isinstance(exc, ReplayMiss)
            else "llm"
        )
        message = redact(str(exc))
    else:
        kind = "llm"
        message = f"the LLM broker failed on this call: {type(exc).__name__}: {redact(exc)}"
    return {
        "kind": kind,
        "message": message,
        "status": getattr(exc, "status", None),
        "retryable": bool(getattr(exc, "retryable", False)),
        "key": getattr(exc, "key", None),
        "retry_after": getattr(exc, "retry_after", None),
        "limit_value": getattr(exc, "limit_value", None),
        "used": getattr(exc, "used", None),
    }


class Broker:
    """Serves one kernel over one stream."""

    def __init__(self, policy: EndpointPolicy) -> None:
        self.policy = policy
        self._engines: dict[int, LLMClient] = {}
        self._engine_ids: dict[str, int] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._answered: set[int] = (
            set()
        )  # calls whose reply arrived: paid for, so a cancel no longer stops them
        self._writer: asyncio.StreamWriter | None = None
        self.ledger = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}

    def _write(self, message: dict[str, Any]) -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(encode(message))

    async def serve(self, sock: socket.socket) -> None:
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=2**20)
        self._writer = writer
        try:
            while True:
                try:
                    message = await read_frame(reader)
                except (OSError, ValueError):
                    message = None
                if message is None:
                    break
                self._dispatch(message)
        finally:
            for task in list(self._tasks.values()):
                task.cancel()
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
            for engine in self._engines.values():
                await engine._aclose_when_idle()  # noqa: SLF001 - the broker owns these clients
            writer.close()

    def _dispatch(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        rid = message.get("id")
        if op == "cancel":
            target = message.get("target")
            task = self._tasks.get(target)  # type: ignore[arg-type]
            if task is not None and target not in self._answered:
                task.cancel()
            return
        handler = getattr(self, f"_op_{op}", None)
        if handler is None or not isinstance(rid, int):
            self._write({"id": rid, "error": error_frame(LLMError(f"unknown broker request {op!r}"))})
            return
        task = asyncio.get_running_loop().create_task(self._run(rid, handler, message))
        self._tasks[rid] = task
        task.add_done_callback(lambda _t: (self._tasks.pop(rid, None), self._answered.discard(rid)))

    async def _run(self, rid: int, handler: Any, message: dict[str, Any]) -> None:
        try:
            reply = await handler(rid, message)
        except asyncio.CancelledError:
            self._write(
                {"id": rid, "cancelled": True}
            )  # nothing was paid for: the kernel releases its reservation
            return
        except BaseException as exc:  # noqa: BLE001 - MemoryError included: only this call fails
            try:
                self._write({"id": rid, "error": error_frame(exc)})
            except BaseException:  # noqa: BLE001 - even the error could not be framed
                self._write(
                    {"id": rid, "error": {"kind": "llm", "message": "the LLM broker failed on this call"}}
                )
            return
        reply["id"] = rid
        self._write(reply)

    # ---- operations
    def _engine(self, message: dict[str, Any]) -> LLMClient:
        engine = self._engines.get(message.get("engine"))  # type: ignore[arg-type]
        if engine is None:
            raise LLMError("the LLM broker does not know this client (it may have been restarted); try again")
        return engine

    async def _op_engine(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        fields = message["fields"]
        ident = json.dumps(fields, sort_keys=True)
        eid = self._engine_ids.get(ident)
        if eid is None or eid not in self._engines:
            config = self.policy.config_for(fields)
            transport = "httpx" if fields.get("transport") == "httpx" else "aiohttp"
            eid = len(self._engine_ids) + 1
            self._engines[eid] = LLMClient(config, transport=transport)
            self._engine_ids[ident] = eid
        return {"engine": eid}

    async def _op_drop(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        return {}  # engines are shared between kernel clients with equal settings; they live as long as we do

    async def _op_lookup(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        engine = self._engine(message)
        hit = await engine.lookup_here(request_from_wire(message["request"]))
        if hit is None:
            return {"hit": None}
        return {"hit": {"response": response_to_wire(hit[0]), "recorded_at": hit[1]}}

    async def _op_send(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        engine = self._engine(message)
        req = request_from_wire(message["request"])

        def event(kind: str, **fields: Any) -> None:
            self._write({"id": rid, "event": kind, "fields": fields})

        resp = await engine._send(req, event)  # noqa: SLF001 - the broker drives its engines
        self._answered.add(rid)  # from here the answer is kept and reported even if the kernel cancels
        unrecorded = await engine.record_here(req, resp)
        self.ledger["calls"] += 1
        self.ledger["input_tokens"] += resp.input_tokens
        self.ledger["output_tokens"] += resp.output_tokens
        self.ledger["cost_usd"] += engine._cost(req.model, resp) or 0.0  # noqa: SLF001 - as _send above
        return {"response": response_to_wire(resp), "unrecorded": unrecorded}

    async def _op_check(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        self.policy.resolve(
            Endpoint.of(message.get("base_url"), message.get("proxy")), message.get("api_key")
        )
        return {}

    async def _op_bind(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        key = message.get("api_key")
        if not isinstance(key, str) or not key:
            raise ConfigError("bind needs the typed api_key", key="api_key")
        self.policy.bind_typed(Endpoint.of(message.get("base_url"), message.get("proxy")), key)
        return {}

    async def _op_status(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "endpoints": self.policy.configured(),
            "ledger": dict(self.ledger),
            "running": len(self._tasks) - 1,
        }


def run_broker(sock: socket.socket) -> None:
    """The broker process's main: serve the kernel on `sock` until it closes."""
    install_log_redaction()
    policy = EndpointPolicy.from_environment()
    asyncio.run(Broker(policy).serve(sock))
