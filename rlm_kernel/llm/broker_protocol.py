"""The broker protocol both sides speak: frames; the wire form of requests, answers, errors, budget chains.

A frame is a 4-byte big-endian length, then one UTF-8 JSON object.

JSON rather than msgpack: stdlib only (no extra dependency in either process), readable when debugging,
and the messages are small dicts, so encoding is not the cost that matters. A length prefix (rather than JSON
lines) lets a reader take exactly one message without scanning for newlines or escaping them.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from typing import TYPE_CHECKING, Any

from rlm_kernel.llm.errors import (
    BudgetExceeded,
    ConfigError,
    LLMError,
    ProviderBudgetExceeded,
    ProviderError,
    RateLimited,
    ReplayMiss,
)
from rlm_kernel.llm.providers.base import ChatRequest, ChatResponse
from rlm_kernel.llm.redact import redact

if TYPE_CHECKING:
    from rlm_kernel.llm.budget import Budget

__all__ = [
    "MAX_FRAME",
    "USED",
    "chain_to_wire",
    "error_frame",
    "error_from_wire",
    "refusal_to_wire",
    "scope_ids",
    "decode",
    "encode",
    "read_frame",
    "read_frame_body",
    "read_frame_size",
    "recv_frame",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "send_frame",
]

MAX_FRAME = 256 * 1024 * 1024
_HEADER = struct.Struct(">I")
USED = ("calls", "input_tokens", "output_tokens", "usd")
"""The spending figures a budget chain carries (what the kernel has settled)."""


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
    size = await read_frame_size(reader)
    return None if size is None else await read_frame_body(reader, size)


async def read_frame_size(reader: asyncio.StreamReader) -> int | None:
    """The size of the next frame's body (its header read), or None at end of stream."""
    try:
        (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    except asyncio.IncompleteReadError:
        return None
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes announced; the limit is {MAX_FRAME}")
    return size


async def read_frame_body(reader: asyncio.StreamReader, size: int) -> dict[str, Any] | None:
    """The message in the next `size` bytes (after `read_frame_size`), or None at end of stream."""
    try:
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
    max_tokens, temperature = data["max_tokens"], data["temperature"]
    # a negative or non-finite figure would reserve less than nothing on the budget
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 10**7:
        raise ValueError(f"max_tokens must be a whole number from 1 to 10**7, got {max_tokens!r}")
    number = isinstance(temperature, int | float) and not isinstance(temperature, bool)
    if not number or not 0 <= temperature <= 100:
        raise ValueError(f"temperature must be a number from 0 to 100, got {temperature!r}")
    return ChatRequest(
        model=str(data["model"]),
        messages=tuple({"role": m["role"], "content": m["content"]} for m in messages),
        max_tokens=max_tokens,
        temperature=float(temperature),
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


# ---- errors: the broker's `error_frame`, the kernel's `error_from_wire`
def refusal_to_wire(exc: BudgetExceeded, scope: str | None) -> dict[str, Any]:
    """The fields of a `BudgetExceeded` error frame (`scope`: the id of the budget that refused)."""
    return {
        "limit": exc.limit,
        "limit_value": exc.limit_value,
        "used": exc.used,
        "requested": exc.requested,
        "scope": scope,
    }


def error_frame(exc: BaseException) -> dict[str, Any]:
    """The wire form of a call's failure: its kind and text only (redacted: the broker knows the keys)."""
    if isinstance(exc, BudgetExceeded) and not isinstance(exc, ProviderBudgetExceeded):
        return {"kind": "budget", "message": str(exc), **refusal_to_wire(exc, getattr(exc, "scope", None))}
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


def error_from_wire(data: dict[str, Any]) -> LLMError:
    """The kernel-side exception of an error frame (a budget refusal keeps its figures)."""
    kind = data.get("kind")
    message = str(data.get("message") or "the LLM broker reported an error without a message")
    if kind == "config":
        return ConfigError(message, key=data.get("key"))
    if kind == "provider":
        return ProviderError(message, status=data.get("status"), retryable=bool(data.get("retryable")))
    if kind == "rate_limited":
        wait = data.get("retry_after")
        return RateLimited(
            message,
            retry_after=float(wait) if isinstance(wait, int | float) else None,
            status=data.get("status"),
            retryable=bool(data.get("retryable")),
        )
    if kind == "provider_budget":
        figures = [
            float(v) if isinstance(v, int | float) else 0.0
            for v in (data.get("limit_value"), data.get("used"))
        ]
        return ProviderBudgetExceeded(
            message, status=data.get("status"), limit_value=figures[0], used=figures[1]
        )
    if kind == "replay_miss":
        return ReplayMiss(message)
    if kind == "budget":

        def number(name: str) -> float:
            value = data.get(name)
            return float(value) if isinstance(value, int | float) else 0.0

        return BudgetExceeded(
            message,
            limit=str(data.get("limit") or ""),
            limit_value=number("limit_value"),
            used=number("used"),
            requested=number("requested"),
        )
    return LLMError(message)


# ---- budget chains: the kernel names each call's chain; the broker's ledger keeps one budget per id
def chain_to_wire(budget: Budget) -> list[dict[str, Any]]:
    """`budget` and its ancestors, root first, as the broker's ledger reads them (kernel side)."""
    chain = []
    b: Budget | None = budget
    while b is not None:
        snap = b.snapshot()
        chain.append(
            {
                "id": b.scope_id,
                "label": b.label,
                "limits": snap["limits"],
                "elapsed": snap["elapsed_s"],
                "used": {k: snap[k] for k in USED},
            }
        )
        b = b.parent
    chain.reverse()
    return chain


def scope_ids(budget: Budget) -> dict[str, Budget]:
    """Id → budget for `budget`'s chain (kernel side: which budget a refusal names)."""
    out = {}
    b: Budget | None = budget
    while b is not None:
        out[b.scope_id] = b
        b = b.parent
    return out
