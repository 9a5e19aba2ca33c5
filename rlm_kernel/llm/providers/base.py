"""The one internal request/response shape every wire format is translated to and from.

A provider module turns a `ChatRequest` into (url, headers, JSON body) and a raw reply into a `ChatResponse`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from rlm_kernel.llm.errors import ProviderError

__all__ = ["ChatRequest", "ChatResponse", "WireFormat", "error_text", "load_json", "missing"]


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
    """A provider's reply, normalised: `finish_reason` is "stop", "length" or the provider's own word."""

    text: str
    model: str
    input_tokens: int
    output_tokens: int
    finish_reason: str | None
    request_id: str | None


class WireFormat(Protocol):
    """What a provider module offers (module-level functions)."""

    name: str

    def build(
        self, req: ChatRequest, base_url: str, api_key: str | None
    ) -> tuple[str, dict[str, str], dict]: ...

    def parse(self, body: bytes, headers: dict[str, str], model: str) -> ChatResponse: ...


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
