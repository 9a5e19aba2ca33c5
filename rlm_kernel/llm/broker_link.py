"""The kernel's side of the broker: one socket, calls multiplexed by id, the broker restarted if it died.

Everything here runs on the LLM layer's loop thread (`llm.event_loop`); `request()` is the blocking form
for magics. The kernel's link is its LLM session's (`LLMSession.link`, None when this process makes its own
calls). The kernel holds key *references* (`broker-key-ref:NAME`), never keys.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections.abc import Callable
from typing import Any

import rlm_kernel.llm.event_loop as event_loop
from rlm_kernel.handover import receive_broker, request_broker
from rlm_kernel.llm.broker_protocol import encode, error_from_wire, read_frame, request_to_wire
from rlm_kernel.llm.errors import LLMError
from rlm_kernel.llm.providers.base import ChatRequest

__all__ = ["BrokerLink"]


class BrokerLink:
    """Frames to and from the broker; a call waits on a future resolved by the reader task."""

    def __init__(
        self,
        control: socket.socket,
        sock: socket.socket | None,
        pid: int | None,
        *,
        answer_pending: bool = False,
    ) -> None:
        """`answer_pending`: the launcher asked for the first broker and left its answer on `control`."""
        self._control = control
        self._sock = sock
        self.pid = pid
        self._answer_pending = answer_pending
        self.generation = 0
        """Increases each time a broker is replaced; engines registered with an older one are gone."""
        self.restarts = 0
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, tuple[asyncio.Future[dict[str, Any]], Callable[..., None] | None]] = {}
        self._streams: dict[int, Callable[[dict[str, Any]], None]] = {}
        """Batches whose item frames are still expected (also after the kernel cancelled them)."""
        self._ids = itertools.count(1)
        self._connecting: asyncio.Lock | None = None

    async def _ensure(self) -> asyncio.StreamWriter:
        if self._writer is not None and not self._writer.is_closing():
            return self._writer
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._writer is not None and not self._writer.is_closing():
                return self._writer
            if self._sock is None:
                first, self._answer_pending = self._answer_pending, False
                try:
                    self._sock, self.pid = await asyncio.to_thread(
                        receive_broker if first else request_broker, self._control
                    )
                except OSError as exc:
                    raise LLMError(
                        f"could not start the LLM broker process ({exc}); restart the kernel"
                    ) from None
                if not first:
                    self.restarts += 1
            reader, writer = await asyncio.open_unix_connection(sock=self._sock, limit=2**20)
            self._writer = writer
            asyncio.get_running_loop().create_task(self._read(reader, self.generation))
            return writer

    async def _read(self, reader: asyncio.StreamReader, generation: int) -> None:
        reason = "its socket closed"
        while True:
            try:
                message = await read_frame(reader)
            except (OSError, ValueError) as exc:
                reason = f"{type(exc).__name__}: {exc}"
                message = None
            if message is None:
                break
            stream = self._streams.get(message.get("id"))  # type: ignore[arg-type]
            if stream is not None:
                final = "item" not in message and "event" not in message
                if final:
                    self._streams.pop(message["id"], None)
                try:
                    stream(message)
                except Exception:  # noqa: BLE001, S110 - a batch's bookkeeping must not stop the reader
                    pass
                if not final:
                    continue
            entry = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if entry is None:
                continue
            fut, on_event = entry
            if "event" in message:
                if on_event is not None:
                    try:
                        on_event(message["event"], **(message.get("fields") or {}))
                    except Exception:  # noqa: BLE001, S110 - an event subscriber's failure is not the call's
                        pass
                continue
            self._pending.pop(message["id"], None)
            if fut.done():
                continue
            if "error" in message:
                fut.set_exception(error_from_wire(message["error"]))
            else:
                fut.set_result(message)
        self._lost(generation, reason)

    def _lost(self, generation: int, reason: str) -> None:
        if generation != self.generation:
            return
        pid = self.pid
        self.generation += 1
        writer, self._writer, self._sock = self._writer, None, None
        if writer is not None:
            writer.close()
        pending, self._pending = self._pending, {}
        streams, self._streams = self._streams, {}
        for rid, stream in streams.items():
            try:
                stream({"id": rid, "lost": reason})
            except Exception:  # noqa: BLE001, S110 - bookkeeping of a batch that is failing anyway
                pass
        for fut, _on_event in pending.values():
            if not fut.done():
                fut.set_exception(
                    LLMError(
                        f"the LLM broker process (pid {pid}) exited while this call was running ({reason}); "
                        "the call failed — the next model call starts a new broker"
                    )
                )

    async def call(
        self,
        op: str,
        body: dict[str, Any],
        on_event: Callable[..., None] | None = None,
    ) -> dict[str, Any]:
        """Send one request and wait for its answer (events go to `on_event`); cancelling cancels it there."""
        writer = await self._ensure()
        rid = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = (fut, on_event)
        try:
            writer.write(encode({"op": op, "id": rid, **body}))
            return await fut
        except asyncio.CancelledError:
            if self._pending.pop(rid, None) is not None and not writer.is_closing():
                writer.write(encode({"op": "cancel", "id": 0, "target": rid}))
            raise
        finally:
            self._pending.pop(rid, None)

    def request(self, op: str, body: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """`call` from an ordinary thread (e.g. a magic), waiting at most `timeout` seconds."""
        return event_loop.submit(self.call(op, body)).result(timeout)

    def close(self) -> None:
        """Close both sockets (from any thread; calls still waiting fail as if the broker had died)."""

        async def shut(writer: asyncio.StreamWriter) -> None:
            writer.close()

        if self._writer is not None:
            event_loop.run_on_loop(shut(self._writer)).result(5)
        elif self._sock is not None:
            self._sock.close()
        self._control.close()

    # ---- typed operations
    async def register_engine(self, fields: dict[str, Any]) -> int:
        return int((await self.call("engine", {"fields": fields}))["engine"])

    def drop_engine(self, generation: int, engine: int) -> None:
        """Nothing to do: the broker shares engines between clients with equal settings."""

    async def batch(
        self,
        engine: int,
        requests: list[ChatRequest],
        scope: dict[str, Any],
        concurrency: int,
        on_frame: Callable[[dict[str, Any]], None],
    ) -> dict[str, Any]:
        """Submit a fan-out as one frame; every item, event and the final frame go to `on_frame` (on this
        loop), also after a cancel (the broker then stops what has not been answered and reports the rest),
        or a synthetic `{"lost": reason}` frame if the broker dies. Returns the final frame."""
        writer = await self._ensure()
        rid = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = (fut, None)
        self._streams[rid] = on_frame
        body = {
            "op": "batch",
            "id": rid,
            "engine": engine,
            "scope": scope,
            "concurrency": concurrency,
            "items": [request_to_wire(r) for r in requests],
        }
        try:
            writer.write(encode(body))
            return await fut
        except asyncio.CancelledError:
            if self._pending.pop(rid, None) is not None and not writer.is_closing():
                writer.write(encode({"op": "cancel", "id": 0, "target": rid}))  # its frames still come
            else:
                self._streams.pop(rid, None)
            raise
        except BaseException:
            self._streams.pop(rid, None)
            raise
        finally:
            self._pending.pop(rid, None)
