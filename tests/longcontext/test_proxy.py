"""The recording proxy: record, replay, refuse unrecorded calls in replay mode, count per tag, keep errors."""

from __future__ import annotations

import httpx

from benchmarks.longcontext.proxy import RecordingProxy
from tests.llm_server import Fault, LLMTestServer

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}


def test_records_then_replays_and_counts_per_tag(llm_server: LLMTestServer, tmp_path) -> None:
    store = tmp_path / "calls.jsonl"
    proxy = RecordingProxy(llm_server.openai_base_url, store).start()
    try:
        first = httpx.post(proxy.url("a|x") + "/chat/completions", json=BODY, timeout=30)
        again = httpx.post(proxy.url("b|y") + "/chat/completions", json=BODY, timeout=30)
    finally:
        proxy.stop()
    assert first.status_code == again.status_code == 200
    assert first.json()["choices"][0]["message"]["content"] == "hello there"
    assert again.json() == first.json()
    assert len(llm_server.requests) == 1  # the second was answered from the store
    sent = llm_server.requests[0].body
    assert sent["max_tokens"] == 1024 and sent["temperature"] == 0  # the same cap and greedy for all
    a, b = proxy.stats("a|x"), proxy.stats("b|y")
    assert (a.calls, a.replayed, b.calls, b.replayed) == (1, 0, 1, 1)
    assert a.input_tokens == b.input_tokens == 2 and a.output_tokens == 2
    assert len(store.read_text().splitlines()) == 1


def test_replay_mode_answers_from_the_store_and_refuses_the_rest(llm_server: LLMTestServer, tmp_path) -> None:
    store = tmp_path / "calls.jsonl"
    recorder = RecordingProxy(llm_server.openai_base_url, store).start()
    httpx.post(recorder.url("t") + "/chat/completions", json=BODY, timeout=30)
    recorder.stop()
    llm_server.stop()  # nothing upstream any more
    proxy = RecordingProxy("http://127.0.0.1:9/v1", store, mode="replay").start()
    try:
        hit = httpx.post(proxy.url("t") + "/chat/completions", json=BODY, timeout=30)
        other = {**BODY, "messages": [{"role": "user", "content": "changed prompt"}]}
        miss = httpx.post(proxy.url("t") + "/chat/completions", json=other, timeout=30)
    finally:
        proxy.stop()
    assert hit.status_code == 200 and hit.json()["choices"][0]["message"]["content"] == "hello there"
    assert miss.status_code == 599 and "not recorded" in miss.json()["error"]


def test_upstream_errors_are_recorded_and_replayed(llm_server: LLMTestServer, tmp_path) -> None:
    llm_server.queue(Fault.http(400, body='{"error": "Cannot have 2 or more assistant messages at the end"}'))
    store = tmp_path / "calls.jsonl"
    proxy = RecordingProxy(llm_server.openai_base_url, store).start()
    try:
        first = httpx.post(proxy.url("t") + "/chat/completions", json=BODY, timeout=30)
        again = httpx.post(proxy.url("t") + "/chat/completions", json=BODY, timeout=30)
    finally:
        proxy.stop()
    assert first.status_code == again.status_code == 400
    assert "assistant messages" in again.text
    assert proxy.stats("t").errors == 2 and len(llm_server.requests) == 1


def test_unknown_mode_is_refused(tmp_path) -> None:
    import pytest

    with pytest.raises(ValueError, match="readwrite, replay, record"):
        RecordingProxy("http://127.0.0.1:9/v1", tmp_path / "s.jsonl", mode="offline")
