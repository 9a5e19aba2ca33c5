"""Wire-format details that the test server does not check: request shapes for the official endpoints."""

from __future__ import annotations

from rlm_kernel.llm.providers import ChatRequest, anthropic, gemini, openai_compat


def _req(model: str = "m") -> ChatRequest:
    msgs = ({"role": "system", "content": "s"}, {"role": "user", "content": "u"})
    return ChatRequest(model=model, messages=msgs, max_tokens=7, temperature=0.0, stop=("X",))


def test_openai_compatible_servers_get_max_tokens() -> None:
    url, headers, body = openai_compat.build(_req(), "http://127.0.0.1:8000/v1/", "k")
    assert url == "http://127.0.0.1:8000/v1/chat/completions"
    assert headers["Authorization"] == "Bearer k"
    assert body["max_tokens"] == 7 and body["temperature"] == 0.0 and body["stop"] == ["X"]


def test_official_openai_gets_max_completion_tokens() -> None:
    _, _, body = openai_compat.build(_req("gpt-4.1-mini"), "https://api.openai.com/v1", "k")
    assert body["max_completion_tokens"] == 7 and "max_tokens" not in body and body["temperature"] == 0.0
    _, _, body = openai_compat.build(_req("o4-mini"), "https://api.openai.com/v1", "k")
    assert "temperature" not in body


def test_anthropic_shape() -> None:
    url, headers, body = anthropic.build(_req(), "https://api.anthropic.com/v1", None)
    assert url == "https://api.anthropic.com/v1/messages" and "x-api-key" not in headers
    assert headers["anthropic-version"] and body["system"] == "s" and body["stop_sequences"] == ["X"]
    assert body["messages"] == [{"role": "user", "content": "u"}]


def test_gemini_shape() -> None:
    url, headers, body = gemini.build(
        _req("gemini-2.5-flash"), "https://generativelanguage.googleapis.com", "k"
    )
    assert url == "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    assert headers["x-goog-api-key"] == "k" and "key=" not in url
    assert body["systemInstruction"] == {"parts": [{"text": "s"}]}
    assert body["generationConfig"] == {"maxOutputTokens": 7, "temperature": 0.0, "stopSequences": ["X"]}


def test_gemini_blocked_prompt_is_an_empty_answer() -> None:
    resp = gemini.parse(b'{"promptFeedback": {"blockReason": "SAFETY"}}', {}, "g")
    assert resp.text == "" and resp.finish_reason == "blocked: SAFETY"


def test_gemini_thinking_tokens_count_as_output() -> None:
    body = (
        b'{"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],'
        b' "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 30}}'
    )
    resp = gemini.parse(body, {}, "gemini-2.5-pro")
    assert (resp.input_tokens, resp.output_tokens, resp.finish_reason) == (5, 32, "stop")
