"""The broker process: holds the keys, the HTTP clients, the cache and the session's budget ledger.

A `batch` frame carries a whole fan-out (one item for a single call) with its call scope: the budget chain
the ledger charges, the owning cell, the batch and its parent, the run. Each item runs as its own task:
cache lookup, reserve on the ledger (or a budget refusal), HTTP with retries, settle with the real usage,
cache write — and whatever goes wrong for one item (an odd reply, a MemoryError reading it, a failing cache
write) becomes that item's error frame and nothing else. The broker exits when its kernel socket closes.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections import Counter
from pathlib import Path
from typing import Any

from rlm_kernel.broker.endpoints import Endpoint, EndpointPolicy
from rlm_kernel.broker.ledger import MAX_TEXT, ROOT_ID, Ledger
from rlm_kernel.broker.spend_store import SpendStore
from rlm_kernel.broker.start_config import StartConfig
from rlm_kernel.llm.broker_protocol import (
    encode,
    error_frame,
    read_frame_body,
    read_frame_size,
    request_from_wire,
    response_to_wire,
)
from rlm_kernel.llm.budget import Budget, Reservation
from rlm_kernel.llm.cache import ResponseCache
from rlm_kernel.llm.client import LLMClient
from rlm_kernel.llm.config import LLMConfig
from rlm_kernel.llm.engine import LOOK_UP_AT_ITS_TURN
from rlm_kernel.llm.errors import ConfigError, LLMCancelled, LLMError, ProviderError
from rlm_kernel.llm.events import CANCELLED
from rlm_kernel.llm.pricing import price_for
from rlm_kernel.llm.redact import install_log_redaction, redact
from rlm_kernel.llm.session import LLMSession
from rlm_kernel.private_files import cache_key_bytes, key_dir, replay_snapshot

__all__ = [
    "MAX_ENGINE_FIELDS",
    "MAX_ENGINES",
    "MAX_PENDING",
    "MAX_PENDING_BYTES",
    "SMALL_FRAME",
    "MAX_SNAPSHOT",
    "WRITE_HIGH_WATER",
    "Broker",
    "run_broker",
]

MAX_ENGINES = 256
"""Distinct client settings one broker serves (each holds HTTP connections): a kernel describing endless new
ones is refused past this."""
MAX_ENGINE_FIELDS = 64 * 1024
"""Characters of one client description (its JSON) the broker accepts."""
MAX_PENDING = 512
"""Requests one broker works on at once; past this it reads no further frame until one ends."""
MAX_PENDING_BYTES = 64 * 1024 * 1024
"""The frames of the requests running now, in bytes: a larger frame's body is read only once enough of them
ended (a frame of any size up to `MAX_FRAME` still runs, alone). Counted only by MAX_PENDING, 512 frames of up
to 256 MB could be held at once (third red team: 12 batches of 40 MB against a slow provider, 1 GB)."""
SMALL_FRAME = 64 * 1024
"""Frames up to this size (cancels, status and budget requests) are read whatever is pending."""
WRITE_HIGH_WATER = 8 * 1024 * 1024
"""Bytes of answers waiting for the kernel to read them; past this the broker reads no further frame until
the kernel has read them (a kernel that asks and never reads holds the broker, not its memory)."""
MAX_SNAPSHOT = 256
"""Budget ids one `budget` request may name."""


def _framed(message: dict[str, Any]) -> bytes:
    """`message` as a frame; one that cannot be encoded (a reply text with lone surrogates, a frame over the
    size limit, no memory) becomes its call's error frame — or nothing, for an event."""
    try:
        return encode(message)
    except BaseException as exc:  # noqa: BLE001 - MemoryError included: only this message is lost
        if "event" in message:
            return b""
        failed = {"id": message.get("id")}
        if "item" in message:
            failed["item"] = message["item"]
        try:
            return encode({**failed, "error": error_frame(exc)})
        except BaseException:  # noqa: BLE001 - even the error could not be framed
            return encode({**failed, "error": {"kind": "llm", "message": "the LLM broker failed on it"}})


class Broker:
    """Serves one kernel over one stream."""

    def __init__(
        self, policy: EndpointPolicy, start: StartConfig | None = None, store: SpendStore | None = None
    ) -> None:
        self.policy = policy
        self.start = start or StartConfig.from_environment()
        """Start-time settings the kernel's frames may only narrow (budget limits, cache place, prices)."""
        self.session = LLMSession()
        """The broker's own LLM session: no broker link (its engines make the calls), its own event bus."""
        self._engines: dict[int, LLMClient] = {}
        self._engine_ids: dict[str, int] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._pending_bytes = 0  # the frame sizes of the requests in `_tasks` (MAX_PENDING_BYTES)
        self._writer: asyncio.StreamWriter | None = None
        self._out: list[dict[str, Any]] = []  # messages waiting for this loop turn's write
        self.ledger = Ledger(self.start, store)
        self._auth: bytes | None = None  # the cache key (private_files), read when a cache is first used
        self.paid = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
        """Every answer this broker paid for (whatever budget it was charged to)."""
        self.paid_by: Counter[str] = Counter()
        """Answers paid for per cell (`owner:<msg_id>`) and run (`run:<id>`), as the scopes name them."""

    def _write(self, message: dict[str, Any]) -> None:
        """Queue one message; those queued in one turn of the loop are encoded and go out in one write (a
        fan-out of 64 produces a burst of start and result frames: one system call for all of them, not one
        each), after the turn's HTTP requests were sent: encoding is off the path from one answer to the
        next request."""
        if self._writer is None or self._writer.is_closing():
            return
        if not self._out:
            asyncio.get_running_loop().call_soon(self._flush)
        self._out.append(message)

    def _flush(self) -> None:
        out, self._out = self._out, []
        if out and self._writer is not None and not self._writer.is_closing():
            self._writer.write(b"".join([_framed(m) for m in out]))

    async def serve(self, sock: socket.socket) -> None:
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=2**20)
        self._writer = writer
        writer.transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        try:
            while True:
                try:
                    size = await read_frame_size(reader)
                    if size is not None and size > SMALL_FRAME:
                        await self._room_for(size)  # a `cancel`, `status` or `budget` frame always gets in
                    message = None if size is None else await read_frame_body(reader, size)
                except (OSError, ValueError, RecursionError):  # a malformed frame (or one nested too deep)
                    message, size = None, 0
                if message is None:
                    break
                self._dispatch(message, size)
                if not await self._backpressure(writer):
                    break
        finally:
            for task in list(self._tasks.values()):
                task.cancel()
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
            for engine in self._engines.values():
                await engine._aclose_when_idle()  # noqa: SLF001 - the broker owns these clients
            self._flush()
            writer.close()

    async def _room_for(self, size: int) -> None:
        """Before the body of a large frame is read: wait while the frames of the requests running now and
        this one pass MAX_PENDING_BYTES (a frame larger than that runs once nothing else does)."""
        while self._tasks and self._pending_bytes + size > MAX_PENDING_BYTES:
            await asyncio.wait(list(self._tasks.values()), return_when=asyncio.FIRST_COMPLETED)

    async def _backpressure(self, writer: asyncio.StreamWriter) -> bool:
        """Before the next frame is read: wait while `MAX_PENDING` requests run, and while the answers the
        kernel has not read pass `WRITE_HIGH_WATER` — what a kernel asks for costs the broker bounded memory
        however it floods. False when the kernel is gone."""
        while len(self._tasks) >= MAX_PENDING:
            await asyncio.wait(list(self._tasks.values()), return_when=asyncio.FIRST_COMPLETED)
        if writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER or len(self._out) > 1024:
            await asyncio.sleep(0)  # this turn's answers go out (`_flush`), then wait for the kernel to read
            try:
                await writer.drain()
            except (ConnectionError, OSError):
                return False
        return True

    def _dispatch(self, message: dict[str, Any], size: int = 0) -> None:
        op = message.get("op")
        rid = message.get("id")
        if op == "cancel":
            target = message.get("target")
            task = self._tasks.get(target)  # type: ignore[arg-type]
            if task is not None:
                task.cancel()  # items whose answer has arrived still settle and report it (see _item)
            return
        handler = getattr(self, f"_op_{op}", None)
        if handler is None or type(rid) is not int:
            what = repr(op)[:80]  # the kernel's text: never echoed at its full size
            self._write({"id": rid, "error": error_frame(LLMError(f"unknown broker request {what}"))})
            return
        if rid in self._tasks:
            # the running tasks are what MAX_PENDING counts: a second request under a live id would replace
            # the first in `_tasks`, so a flood of one id ran without bound (third red team: 3000 batches of
            # 200 KB under one id took the broker to 1.3 GB)
            error = LLMError("the LLM broker is still running a request with this id; use a new id")
            self._write({"id": rid, "error": error_frame(error)})
            return
        task = asyncio.get_running_loop().create_task(self._run(rid, handler, message))
        self._tasks[rid] = task
        self._pending_bytes += size

        def done(_task: asyncio.Task[None]) -> None:
            self._tasks.pop(rid, None)
            self._pending_bytes -= size

        task.add_done_callback(done)

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
        if not isinstance(fields, dict):
            raise ValueError("an engine is described by a dict of fields")
        ident = json.dumps(fields, sort_keys=True)
        if len(ident) > MAX_ENGINE_FIELDS:  # an engine lives as long as the broker: so does what it holds
            raise ConfigError(
                f"the LLM broker refused a client described in {len(ident)} characters (at most "
                f"{MAX_ENGINE_FIELDS}: a prices table of a few hundred models fits)",
                key="engine",
            )
        eid = self._engine_ids.get(ident)
        if eid is None or eid not in self._engines:
            if len(self._engines) >= MAX_ENGINES:
                raise ConfigError(
                    f"the LLM broker already serves {MAX_ENGINES} different client settings; restart the "
                    "kernel to start afresh",
                    key="engine",
                )
            config = self.policy.config_for(fields, self.start)
            transport = "httpx" if fields.get("transport") == "httpx" else "aiohttp"
            eid = len(self._engine_ids) + 1
            engine = LLMClient(config, transport=transport, session=self.session)
            engine.cache = self._cache_for(config)
            self._engines[eid] = engine
            self._engine_ids[ident] = eid
        return {"engine": eid}

    def _cache_for(self, config: LLMConfig) -> ResponseCache:
        """The engine's response cache, authenticated with this broker's key; a replay of the start-time
        cache reads the supervisor's start-time copy (where untagged recordings are trusted)."""
        if config.cache == "off":
            return ResponseCache(Path(config.cache_dir or "."), "off")
        if self._auth is None:
            try:
                self._auth = cache_key_bytes()
            except OSError as exc:
                raise ConfigError(
                    f"the LLM broker cannot read or make its cache key in {key_dir()}: {exc.strerror}; set "
                    "XDG_STATE_HOME to a private writable folder, or RLM_CACHE=off",
                    key="cache",
                ) from None
        snapshot = replay_snapshot(config.cache_dir) if config.cache == "replay" else None
        if snapshot is not None:
            return ResponseCache(snapshot, "replay", auth=self._auth, trust_untagged=True)
        return ResponseCache(Path(config.cache_dir), config.cache, auth=self._auth)

    async def _op_drop(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        return {}  # engines are shared between kernel clients with equal settings; they live as long as we do

    async def _op_batch(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        """Run a fan-out: per item a result or error frame (and its events), then the final frame."""
        engine = self._engine(message)
        scope = message.get("scope") or {}
        if not isinstance(scope, dict):
            raise ValueError("a batch's scope must be a dict")
        budget, names = self.ledger.chain(scope.get("budgets"))
        owners = [f"{k}:{scope[k][:MAX_TEXT]}" for k in ("owner", "run") if isinstance(scope.get(k), str)]
        items = message["items"]
        if not isinstance(items, list):
            raise ValueError("a batch's items must be a list")
        limit = message.get("concurrency", 1)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 4096:
            raise ValueError(f"concurrency must be a whole number from 1 to 4096, got {limit!r}")
        reqs: list[Any] = []
        for data in items:
            try:
                reqs.append(request_from_wire(data))
            except Exception as exc:  # noqa: BLE001 - a malformed item fails alone, at its turn
                reqs.append(exc)
        looked_up: list[Any] = [LOOK_UP_AT_ITS_TURN] * len(items)
        if engine.config.cache != "off":  # one lookup for the whole fan-out, not one worker hop per item
            valid = [i for i, r in enumerate(reqs) if not isinstance(r, BaseException)]
            for i, hit in zip(valid, await engine.lookup_many_here([reqs[i] for i in valid]), strict=True):
                looked_up[i] = hit
        pending = iter(range(len(items)))  # shared by the workers: each item is taken once, in order

        async def worker() -> None:
            # `limit` workers taking items in turn, rather than a task per item queued on a semaphore: a
            # fan-out of 1000 costs 64 tasks, and a finished call starts the next with no wake-up in between
            for index in pending:
                try:
                    req = reqs[index]
                    if isinstance(req, BaseException):
                        raise req
                    await self._item(rid, index, engine, budget, names, req, owners, looked_up[index])
                except asyncio.CancelledError:
                    raise
                except _Reported:
                    pass  # its error frame (with what it was charged) went out already
                except BaseException as exc:  # noqa: BLE001 - MemoryError included: only this item fails
                    try:
                        self._write({"id": rid, "item": index, "error": error_frame(exc)})
                    except BaseException:  # noqa: BLE001 - even the error could not be framed
                        self._write({"id": rid, "item": index, "error": {"kind": "llm", "message": "failed"}})

        await asyncio.gather(*(worker() for _ in range(min(limit, len(items)))))
        return {"done": len(items)}

    async def _item(
        self,
        rid: int,
        index: int,
        engine: LLMClient,
        budget: Budget,
        names: dict[int, str],
        req: Any,
        owners: list[str],
        looked_up: Any = LOOK_UP_AT_ITS_TURN,
    ) -> None:
        prices = engine.config.prices
        if engine.config.cache != "off":
            hit = await engine.lookup_here(req) if looked_up is LOOK_UP_AT_ITS_TURN else looked_up
            if isinstance(hit, BaseException):
                raise hit
            if hit is not None:
                budget.record_cached()
                self._write(
                    {"id": rid, "item": index, "response": response_to_wire(hit[0]), "cached": hit[1]}
                )
                return
        self._priced(engine, req)
        reservation = self.ledger.reserve(budget, req, prices, names)
        self.ledger.persist()
        held = [reservation]  # the reservation of the attempt in flight
        lost = [0, 0, 0.0]  # attempts that got no answer, charged at their worst case

        def charge(res: Reservation) -> None:
            inp, out, usd = self.ledger.charge(budget, res)
            lost[0], lost[1], lost[2] = lost[0] + inp, lost[1] + out, lost[2] + (usd or 0.0)

        def event(kind: str, **fields: Any) -> None:
            extra = fields.get("extra") or {}
            if kind == "retry" and extra.get("status") is None and extra.get("sent"):
                # the attempt timed out or lost its connection once its request was out: the provider may
                # have served (and billed) it, so it is paid for; the retry is a new call on the budget,
                # refused at its limit like any other
                charge(held[0])
                held[0] = self.ledger.reserve(budget, req, prices, names)
                self.ledger.persist()
            self._write({"id": rid, "event": kind, "index": index, "fields": fields})

        event(
            "start",
            extra={"max_tokens": req.max_tokens},
            reserved=[reservation.input_tokens, reservation.output_tokens, reservation.usd],
        )
        try:
            resp = await engine._send(req, event)  # noqa: SLF001 - the broker drives its engines
        except BaseException as exc:
            if not held[0].done:
                if _answered_without_service(exc):
                    budget.release(held[0])  # the provider answered with an error: nothing was served
                else:  # cancelled, timed out or cut off once sent: the provider may have served it
                    charge(held[0])
            self.ledger.persist()
            if lost[0] or lost[1] or lost[2]:
                self._write(
                    {
                        "id": rid,
                        "item": index,
                        "error": error_frame(exc if isinstance(exc, LLMError) else LLMCancelled(CANCELLED)),
                        "charge": [lost[0], lost[1], lost[2] or None],
                    }
                )
                if not isinstance(exc, LLMError):
                    raise
                raise _Reported() from None
            raise
        # the answer arrived: it is paid for, so it is settled and reported even if the batch is cancelled now
        reservation = held[0]
        resp, usd = self.ledger.settle(budget, reservation, req, resp, prices)
        self.ledger.persist()
        if lost[2]:  # earlier attempts of this item that got no answer, paid at their worst case
            usd = (usd or 0.0) + lost[2]
        self.paid["calls"] += 1
        self.paid["input_tokens"] += resp.input_tokens
        self.paid["output_tokens"] += resp.output_tokens
        self.paid["cost_usd"] += usd or 0.0
        self.paid_by.update(owners)
        try:
            unrecorded = await engine.record_here(req, resp)
        except asyncio.CancelledError:
            unrecorded = "the call was cancelled before its answer was recorded"
        except BaseException as exc:  # noqa: BLE001 - a cache that fails only loses this recording
            unrecorded = f"{type(exc).__name__}: {redact(exc)}"
        self._write(
            {
                "id": rid,
                "item": index,
                "response": response_to_wire(resp),
                "charge": [resp.input_tokens + lost[0], resp.output_tokens + lost[1], usd],
                "unrecorded": unrecorded,
            }
        )

    def _priced(self, engine: LLMClient, req: Any) -> None:
        """Under a start-time USD limit, refuse a model without a start-time or built-in price: it would be
        counted in tokens only (a price the kernel sends does not count: it could say 0). The offline model
        costs nothing."""
        limit = self.start.limits.get("max_usd")
        if limit is None or engine.config.provider == "local" or engine.config.base_url is None:
            return
        if price_for(req.model, self.start.prices) is None:
            raise ConfigError(
                f"the LLM broker refused model {req.model[:80]!r}: no price is known for it, and the "
                f"USD limit set when the kernel started (${limit:g}) could not count its calls; give its "
                "price in the settings file's [prices] table before starting the kernel, or "
                "use a model with a known price",
                key="prices",
            )

    async def _op_budget(self, rid: int, message: dict[str, Any]) -> dict[str, Any]:
        """The budget snapshot frame: the ledger's figures for the named scopes (at most `MAX_SNAPSHOT`; the
        session's root if none are named — never every scope: a 30-byte request must not cost megabytes)."""
        ids = message.get("scopes")
        if ids is None:
            ids = [ROOT_ID]
        if not isinstance(ids, list) or len(ids) > MAX_SNAPSHOT:
            raise ValueError(f"a budget request names a list of at most {MAX_SNAPSHOT} scope ids")
        return {"budgets": self.ledger.snapshot([str(i) for i in ids])}

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
            "paid": dict(self.paid),
            "paid_by": dict(self.paid_by),
            "scopes": len(self.ledger),
            "cache_refused": sum(e.cache.refused for e in self._engines.values() if e.cache is not None),
            "running": len(self._tasks) - 1,
        }


class _Reported(Exception):  # noqa: N818 - a control-flow marker, not an error anyone sees
    """An item's failure whose error frame `_item` wrote itself (it carries what the item was charged)."""


def _answered_without_service(exc: BaseException) -> bool:
    """Whether a failed call's provider answered that it did not serve it (an HTTP error status) — then its
    reservation is released — or that the request never reached it (its connection was never made). Anything
    else once the request was out (a cancel, a timeout, a lost connection, an unreadable 2xx reply) may have
    been served and billed: it is charged at its worst case."""
    if not isinstance(exc, ProviderError):
        return False
    status = exc.status
    if status is None:
        return not exc.request_sent  # a connection that was never made: nothing reached the provider
    return not 200 <= status < 300


def run_broker(sock: socket.socket, store: SpendStore | None = None) -> None:
    """The broker process's main: serve the kernel on `sock` until it closes (`store`: the session's
    spending, kept by the supervisor across brokers)."""
    install_log_redaction()
    policy = EndpointPolicy.from_environment()
    asyncio.run(Broker(policy, StartConfig.from_environment(), store).serve(sock))
