"""Google Gemini `generateContent` (`POST {base}/v1beta/models/{model}:generateContent`, `x-goog-api-key`).

The key travels in a header, never in the URL; roles map user→user, assistant→model, system→systemInstruction.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

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

__all__ = ["build", "name", "parse"]

name = "gemini"
_STOP = {"STOP": "stop", "MAX_TOKENS": "length"}


def build(req: ChatRequest, base_url: str, api_key: str | None) -> tuple[str, dict[str, str], dict[str, Any]]:
    """URL, headers and JSON body for `req`."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["x-goog-api-key"] = api_key
    system = "\n\n".join(m["content"] for m in req.messages if m["role"] == "system")
    contents = [
        {"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
        for m in req.messages
        if m["role"] != "system"
    ]
    config: dict[str, Any] = {"maxOutputTokens": req.max_tokens, "temperature": req.temperature}
    if req.stop:
        config["stopSequences"] = list(req.stop)
    body: dict[str, Any] = {"contents": contents, "generationConfig": config}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    base = base_url.rstrip("/")
    if not base.endswith(("/v1beta", "/v1")):
        base += "/v1beta"
    return f"{base}/models/{quote(req.model, safe='-._')}:generateContent", headers, body


def parse(body: bytes, headers: dict[str, str], model: str) -> ChatResponse:
    """Read a 2xx generateContent reply."""
    data = load_json(body, name, model)
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        feedback = data.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            return ChatResponse(
                "", model, 0, 0, f"blocked: {feedback['blockReason']}", data.get("responseId")
            )
        raise missing(name, model, "`candidates`")
    content = candidates[0].get("content")
    text = join_text(content.get("parts") if isinstance(content, dict) else None)
    usage = usage_of(data, "usageMetadata")
    stop = candidates[0].get("finishReason")
    if not text:
        raise no_content_error(name, model, stop.lower() if isinstance(stop, str) else stop)
    return ChatResponse(
        text=text,
        model=str(data.get("modelVersion") or model),
        input_tokens=token_count(usage.get("promptTokenCount")),
        # thinking tokens are billed as output
        output_tokens=token_count(usage.get("candidatesTokenCount"))
        + token_count(usage.get("thoughtsTokenCount")),
        finish_reason=_STOP.get(stop, stop.lower() if isinstance(stop, str) else stop),
        request_id=data.get("responseId"),
    )
