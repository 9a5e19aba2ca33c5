"""The one internal request/response shape every wire format is translated to and from.

A provider module turns a `ChatRequest` into (url, headers, JSON body) and a raw reply into a `ChatResponse`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rlm_kernel.llm.errors import ProviderError

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "error_text",
    "join_text",
    "load_json",
    "missing",
    "no_content_error",
    "token_count",
    "usage_of",
]


@dataclass(frozen=True)
class ChatRequest:
    """A chat completion request: `messages` are `{"role": "system"|"user"|"assistant", "content": str}`."""

    model: str
    messages: tuple[dict[str, str], ...]
    max_tokens: int
    temperature: float = 0.0
    stop: tuple[str, ...] = field(default_factory=tuple)

    def params(self) -> dict[str, Any]:
        """The generation parameters (part of the cache key)."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "stop": list(self.stop)}


@dataclass(frozen=True)
class ChatResponse:
    """A provider's reply, normalised: `finish_reason` is "stop", "length" or the provider's own word;
    `cost_usd` is what a gateway reported the call cost (None: not reported, priced from our table)."""

    text: str
    model: str
    input_tokens: int
    output_tokens: int
    finish_reason: str | None
    request_id: str | None
    cost_usd: float | None = None


def load_json(body: bytes, provider: str, model: str) -> dict[str, Any]:
    """Parse a 2xx body as a JSON object or raise a (non-retryable) `ProviderError` saying what was wrong."""
    try:
        data = json.loads(body)
    except ValueError:
        snippet = body[:120].decode("utf-8", "replace")
        raise ProviderError(
            f"{provider} returned a reply that is not valid JSON (first bytes: {snippet!r})",
            retryable=False,
            provider=provider,
            model=model,
        ) from None
    if not isinstance(data, dict):
        raise ProviderError(
            f"{provider} returned JSON that is not an object", retryable=False, provider=provider, model=model
        )
    return data


def missing(provider: str, model: str, what: str) -> ProviderError:
    """The error for a well-formed reply that lacks the expected field."""
    return ProviderError(
        f"{provider} returned a reply without {what}; the server may not speak the {provider} API "
        "(check the provider and base URL settings)",
        retryable=False,
        provider=provider,
        model=model,
    )


def no_content_error(provider: str, model: str, finish_reason: str | None) -> ProviderError:
    """The error for a 2xx reply that holds no answer text (a refusal, a content filter, a tool call)."""
    why = f" (finish reason {finish_reason!r})" if finish_reason else ""
    return ProviderError(
        f"{provider} returned no answer text for model {model!r}{why} — a refusal, a content filter or a "
        "tool call; this call failed and nothing was recorded in the cache",
        retryable=False,
        provider=provider,
        model=model,
    )


def token_count(value: Any) -> int:
    """A usage count from a reply: whole numbers (also "11" or 11.0) count; anything else ("n/a", null) is 0,
    so the client estimates the usage instead."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    return int(number) if number.is_integer() and number >= 0 else 0


def usage_of(data: dict[str, Any], key: str) -> dict[str, Any]:
    """The usage table of a reply, or {} when it is missing or not a table."""
    usage = data.get(key)
    return usage if isinstance(usage, dict) else {}


def join_text(parts: Any) -> str | None:
    """The text of a list of content parts (`{"text": ...}`; other parts and null texts skipped), of a
    string, or None when `parts` is neither (e.g. content given as an object)."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        return None
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


def error_text(body: bytes) -> str:
    """The message inside a provider's error body (`{"error": {"message": ...}}` and kin), else the body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:300].decode("utf-8", "replace").strip()
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or err.get("type")
            if msg:
                return str(msg)[:500]
        elif isinstance(err, str):
            return err[:500]
    return body[:300].decode("utf-8", "replace").strip()
