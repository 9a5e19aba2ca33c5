"""OpenAI-compatible chat completions (`POST {base_url}/chat/completions`): OpenAI, vLLM, llama.cpp, Ollama...

`base_url` includes the version prefix, e.g. `https://api.openai.com/v1`. Other servers get `max_tokens`;
api.openai.com gets `max_completion_tokens` (and no temperature for its reasoning models).
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

__all__ = ["build", "name", "parse"]

name = "openai"
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def _is_official(base_url: str) -> bool:
    return "://api.openai.com" in base_url


def build(req: ChatRequest, base_url: str, api_key: str | None) -> tuple[str, dict[str, str], dict[str, Any]]:
    """URL, headers and JSON body for `req`."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    body: dict[str, Any] = {"model": req.model, "messages": [dict(m) for m in req.messages]}
    if _is_official(base_url):
        # OpenAI's current models take `max_completion_tokens` (reasoning models reject `max_tokens`) and
        # reasoning models accept only their default temperature.
        body["max_completion_tokens"] = req.max_tokens
        if not req.model.startswith(_REASONING_PREFIXES):
            body["temperature"] = req.temperature
    else:
        body["max_tokens"] = req.max_tokens
        body["temperature"] = req.temperature
    if req.stop:
        body["stop"] = list(req.stop)
    return base_url.rstrip("/") + "/chat/completions", headers, body


def parse(body: bytes, headers: dict[str, str], model: str) -> ChatResponse:
    """Read a 2xx chat completion reply."""
    data = load_json(body, name, model)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise missing(name, model, "`choices`")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise missing(name, model, "`choices[0].message`")
    text = join_text(message.get("content"))
    if not text:
        raise no_content_error(name, model, choices[0].get("finish_reason"))
    usage = usage_of(data, "usage")
    return ChatResponse(
        text=text,
        model=str(data.get("model") or model),
        input_tokens=token_count(usage.get("prompt_tokens")),
        output_tokens=token_count(usage.get("completion_tokens")),
        finish_reason=choices[0].get("finish_reason"),
        request_id=headers.get("x-request-id") or data.get("id"),
    )
