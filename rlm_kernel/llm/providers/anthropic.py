"""The Anthropic Messages API (`POST {base_url}/v1/messages`, `x-api-key`, `anthropic-version`).

System messages move to the top-level `system` field; stop reasons map to "stop"/"length".
"""

from __future__ import annotations

from typing import Any

from rlm_kernel.llm.providers.base import (
    ChatRequest,
    ChatResponse,
    join_text,
    load_json,
    missing,
    no_content_error,
    token_count,
    usage_of,
)

__all__ = ["API_VERSION", "build", "name", "parse"]

name = "anthropic"
API_VERSION = "2023-06-01"
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def build(req: ChatRequest, base_url: str, api_key: str | None) -> tuple[str, dict[str, str], dict[str, Any]]:
    """URL, headers and JSON body for `req`."""
    headers = {"Content-Type": "application/json", "anthropic-version": API_VERSION}
    if api_key:
        headers["x-api-key"] = api_key
    system = "\n\n".join(m["content"] for m in req.messages if m["role"] == "system")
    messages = [{"role": m["role"], "content": m["content"]} for m in req.messages if m["role"] != "system"]
    body: dict[str, Any] = {
        "model": req.model,
        "messages": messages,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
    }
    if system:
        body["system"] = system
    if req.stop:
        body["stop_sequences"] = list(req.stop)
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[:-3]
    return base + "/v1/messages", headers, body


def parse(body: bytes, headers: dict[str, str], model: str) -> ChatResponse:
    """Read a 2xx Messages reply."""
    data = load_json(body, name, model)
    content = data.get("content")
    if not isinstance(content, list):
        raise missing(name, model, "`content`")
    text = join_text([b for b in content if isinstance(b, dict) and b.get("type", "text") == "text"])
    usage = usage_of(data, "usage")
    stop = data.get("stop_reason")
    if not text:
        raise no_content_error(name, model, _STOP.get(stop, stop))
    return ChatResponse(
        text=text,
        model=str(data.get("model") or model),
        input_tokens=token_count(usage.get("input_tokens")),
        output_tokens=token_count(usage.get("output_tokens")),
        finish_reason=_STOP.get(stop, stop),
        request_id=headers.get("request-id") or data.get("id"),
    )
