"""The local LLM test server itself: wire formats, deterministic usage, faults, recording.

Uses plain httpx so a bug in our client cannot hide a bug in the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
        Fault.timeout(30),
    )
    url = llm_server.openai_base_url + "/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=3.0) as c:  # far above a local reply, far below the 30 s hang
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


def test_cli_with_a_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "mode": "count",
                "replies": ["first scripted", {"fault": "status", "status": 503}],
                "rules": [{"contains": "weather", "reply": "sunny"}],
            }
        )
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.llm_server", "--port", "0", "--mode", str(script)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:")
        url = base + "/v1/chat/completions"

        def ask(text: str) -> httpx.Response:
            return httpx.post(url, json={"model": "m", "messages": [{"role": "user", "content": text}]})

        assert ask("a b").json()["choices"][0]["message"]["content"] == "first scripted"
        assert ask("x").status_code == 503
        assert ask("the weather today").json()["choices"][0]["message"]["content"] == "sunny"
        assert ask("one two three").json()["choices"][0]["message"]["content"] == "3"
        recorded = httpx.get(base + "/_test/requests").json()
        assert [r["last_user"] for r in recorded] == ["a b", "x", "the weather today", "one two three"]
    finally:
        proc.terminate()
        proc.wait(10)
