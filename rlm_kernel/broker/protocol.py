"""Frames between kernel and broker: a 4-byte big-endian length, then one UTF-8 JSON object.

JSON rather than msgpack: stdlib only (no extra dependency in either process), readable when debugging,
and the messages are small dicts, so encoding is not the cost that matters. A length prefix (rather than JSON
lines) lets a reader take exactly one message without scanning for newlines or escaping them.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from typing import Any

from rlm_kernel.llm.providers.base import ChatRequest, ChatResponse

__all__ = [
    "MAX_FRAME",
    "decode",
    "encode",
    "read_frame",
    "recv_frame",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "send_frame",
]

MAX_FRAME = 256 * 1024 * 1024
_HEADER = struct.Struct(">I")


def encode(message: dict[str, Any]) -> bytes:
    """One frame for `message`."""
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise ValueError(f"message of {len(data)} bytes is larger than a frame may be ({MAX_FRAME})")
    return _HEADER.pack(len(data)) + data


def decode(data: bytes) -> dict[str, Any]:
    """The message in a frame's body (which must be a JSON object)."""
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("a frame must hold a JSON object")
    return message


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None at end of stream."""
    try:
        header = await reader.readexactly(_HEADER.size)
        (size,) = _HEADER.unpack(header)
        if size > MAX_FRAME:
            raise ValueError(f"frame of {size} bytes announced; the limit is {MAX_FRAME}")
        return decode(await reader.readexactly(size))
    except asyncio.IncompleteReadError:
        return None


def send_frame(sock: socket.socket, message: dict[str, Any]) -> None:
    """Write one message on a blocking socket."""
    sock.sendall(encode(message))


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket) -> dict[str, Any] | None:
    """Read one message from a blocking socket (None at end of stream)."""
    header = _recv_exactly(sock, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    body = _recv_exactly(sock, size)
    return None if body is None else decode(body)


def request_to_wire(req: ChatRequest) -> dict[str, Any]:
    """A `ChatRequest` as plain JSON values."""
    return {
        "model": req.model,
        "messages": [dict(m) for m in req.messages],
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "stop": list(req.stop),
    }


def request_from_wire(data: dict[str, Any]) -> ChatRequest:
    """The `ChatRequest` sent by `request_to_wire` (types checked: the broker trusts nothing it is sent)."""
    messages = data["messages"]
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
        for m in messages
    ):
        raise ValueError("request messages must be a list of {role, content} strings")
    return ChatRequest(
        model=str(data["model"]),
        messages=tuple({"role": m["role"], "content": m["content"]} for m in messages),
        max_tokens=int(data["max_tokens"]),
        temperature=float(data["temperature"]),
        stop=tuple(str(s) for s in data.get("stop") or ()),
    )


def response_to_wire(resp: ChatResponse) -> dict[str, Any]:
    """A `ChatResponse` as plain JSON values (field by field: `dataclasses.asdict` deep-copies every value,
    which cost more than the rest of the frame)."""
    return {
        "text": resp.text,
        "model": resp.model,
        "input_tokens": resp.input_tokens,
        "output_tokens": resp.output_tokens,
        "finish_reason": resp.finish_reason,
        "request_id": resp.request_id,
        "cost_usd": resp.cost_usd,
    }


def response_from_wire(data: dict[str, Any]) -> ChatResponse:
    """The `ChatResponse` sent by `response_to_wire`."""
    return ChatResponse(
        text=str(data["text"]),
        model=str(data["model"]),
        input_tokens=int(data["input_tokens"]),
        output_tokens=int(data["output_tokens"]),
        finish_reason=None if data.get("finish_reason") is None else str(data["finish_reason"]),
        request_id=None if data.get("request_id") is None else str(data["request_id"]),
        cost_usd=float(data["cost_usd"]) if isinstance(data.get("cost_usd"), int | float) else None,
    )
