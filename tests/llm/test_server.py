"""The local LLM test server itself: wire formats, deterministic usage, faults, recording.

Uses plain httpx so a bug in our client cannot hide a bug in the server.
"""

from __future__ import annotations

import httpx
import pytest

from tests.llm_server import Fault, LLMTestServer, Reply


def test_openai_echo_usage_and_recording(llm_server: LLMTestServer) -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "a b c"}]
    body = {"model": "m1", "messages": messages}
    r = httpx.post(llm_server.openai_base_url + "/chat/completions", json=body)
    data = r.json()
    assert data["choices"][0]["message"]["content"] == "a b c"
    assert data["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    (rec,) = llm_server.requests
    assert (rec.wire, rec.model, rec.prompt, rec.last_user) == ("openai", "m1", "be brief\na b c", "a b c")


def test_anthropic_and_gemini_wire(llm_server: LLMTestServer) -> None:
    llm_server.queue(Reply("one two three four"), "x y")
    r = httpx.post(
        llm_server.base_url + "/v1/messages",
        json={"model": "c", "system": "s", "max_tokens": 2, "messages": [{"role": "user", "content": "q"}]},
    ).json()
    assert r["content"][0]["text"] == "one two" and r["stop_reason"] == "max_tokens"
    assert r["usage"] == {"input_tokens": 2, "output_tokens": 2}
    r = httpx.post(
        llm_server.base_url + "/v1beta/models/g:generateContent",
        json={"contents": [{"role": "user", "parts": [{"text": "p q r"}]}]},
    ).json()
    assert r["candidates"][0]["content"]["parts"][0]["text"] == "x y"
    assert r["usageMetadata"]["promptTokenCount"] == 3
    assert [q.wire for q in llm_server.requests] == ["anthropic", "gemini"]


def test_faults(llm_server: LLMTestServer) -> None:
    llm_server.queue(
        Fault.rate_limited(retry_after_ms=120),
        Fault.unauthorized(),
        Fault.malformed(),
        Fault.missing_choices(),
        Fault.reset(),
        Fault.timeout(2),
    )
    url = llm_server.openai_base_url + "/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=0.5) as c:
        r = c.post(url, json=body)
        assert r.status_code == 429 and r.headers["retry-after-ms"] == "120"
        r = c.post(url, json=body, headers={"Authorization": "Bearer sk-planted"})
        assert r.status_code == 401 and "sk-planted" in r.text
        with pytest.raises(ValueError):
            c.post(url, json=body).json()
        assert "choices" not in c.post(url, json=body).json()
        with pytest.raises(httpx.RemoteProtocolError):
            c.post(url, json=body)
        with pytest.raises(httpx.ReadTimeout):
            c.post(url, json=body)
    assert len(llm_server.requests) == 6


def test_reply_with_and_require_key(llm_server: LLMTestServer) -> None:
    llm_server.reply_with(lambda req: req.last_user.upper())
    llm_server.require_key = "k1"
    url = llm_server.openai_base_url + "/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert httpx.post(url, json=body).status_code == 401
    r = httpx.post(url, json=body, headers={"Authorization": "Bearer k1"})
    assert r.json()["choices"][0]["message"]["content"] == "HI"
