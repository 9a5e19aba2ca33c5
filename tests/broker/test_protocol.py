"""The broker's own checks, spoken to over a socketpair with the real protocol (no kernel in between)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlm_kernel.broker.endpoints import EndpointPolicy
from rlm_kernel.broker.server import Broker
from rlm_kernel.handover import key_ref
from rlm_kernel.llm.broker_protocol import recv_frame, request_to_wire, send_frame
from rlm_kernel.llm.providers.base import ChatRequest
from tests.llm_server import Fault, LLMTestServer

KEY = "sk-broker-protocol-key-0123456789"


@pytest.fixture
def broker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, llm_server: LLMTestServer
) -> Iterator[socket.socket]:
    for name in ("RLM_CONFIG", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "RLM_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("RLM_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("RLM_API_KEY", KEY)
    monkeypatch.setenv("RLM_CACHE_DIR", str(tmp_path))  # the broker's start-time cache place
    ours, theirs = socket.socketpair()
    thread = threading.Thread(
        target=lambda: asyncio.run(Broker(EndpointPolicy.from_environment()).serve(theirs)), daemon=True
    )
    thread.start()
    try:
        yield ours
    finally:
        ours.close()
        thread.join(10)
        assert not thread.is_alive(), "the broker did not exit when its socket closed"


def _fields(base_url: str, api_key: str | None, tmp_path: Path, **over: Any) -> dict[str, Any]:
    fields = {
        "provider": "openai",
        "base_url": base_url,
        "proxy": None,
        "api_key": api_key,
        "concurrency": 4,
        "max_connections": 4,
        "max_retries": 0,
        "timeout": 10.0,
        "connect_timeout": 5.0,
        "retry_after_cap": 1.0,
        "cache": "off",
        "cache_dir": str(tmp_path),
        "prices": {},
        "transport": "aiohttp",
    }
    fields.update(over)
    return fields


def _ask(sock: socket.socket, message: dict[str, Any]) -> dict[str, Any]:
    """The final frame of a request (events and item frames skipped)."""
    return _collect(sock, message)[-1]


def _collect(sock: socket.socket, message: dict[str, Any]) -> list[dict[str, Any]]:
    """Every frame answering `message`, up to and including its final frame."""
    send_frame(sock, message)
    frames = []
    while True:
        reply = recv_frame(sock)
        assert reply is not None
        frames.append(reply)
        if "event" not in reply and "item" not in reply:
            return frames


def _openai_text(text: str) -> dict[str, Any]:
    return {
        "id": "x",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }


def _chain(*budgets: tuple[str, dict[str, Any], dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": sid, "label": sid, "limits": limits, "elapsed": 0.0, "used": used}
        for sid, limits, used in budgets
    ]


def test_unconfigured_endpoint_is_refused_by_the_broker_itself(
    broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    with LLMTestServer() as other:
        for fields in (
            _fields(other.openai_base_url, key_ref("RLM_API_KEY"), tmp_path),
            _fields(llm_server.openai_base_url, key_ref("RLM_API_KEY"), tmp_path, proxy=other.base_url),
            _fields(other.openai_base_url, None, tmp_path),
            _fields(other.openai_base_url, "a-key-never-bound", tmp_path),
        ):
            reply = _ask(broker, {"op": "engine", "id": 1, "fields": fields})
            assert reply["error"]["kind"] == "config" and "refused" in reply["error"]["message"], reply
        assert other.requests == []


def test_a_configured_endpoint_gets_the_key_and_per_call_frames(
    broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    fields = _fields(llm_server.openai_base_url, key_ref("X"), tmp_path)
    reply = _ask(broker, {"op": "engine", "id": 1, "fields": fields})
    engine = reply["engine"]
    req = request_to_wire(ChatRequest(model="m", messages=({"role": "user", "content": "hi"},), max_tokens=8))
    scope = {"budgets": _chain(("s", {}, {}))}
    frames = _collect(
        broker, {"op": "batch", "id": 2, "engine": engine, "scope": scope, "concurrency": 1, "items": [req]}
    )
    answer = next(f for f in frames if "item" in f)
    assert answer["id"] == 2 and answer["response"]["text"] == "hi", frames
    assert frames[-1] == {"id": 2, "done": 1}
    assert llm_server.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    status = _ask(broker, {"op": "status", "id": 3})
    assert status["paid"]["calls"] == 1
    assert KEY not in str(status)


def _engine(broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path) -> int:
    reply = _ask(
        broker,
        {"op": "engine", "id": 1, "fields": _fields(llm_server.openai_base_url, key_ref("X"), tmp_path)},
    )
    return int(reply["engine"])


def _items(n: int) -> list[dict[str, Any]]:
    return [
        request_to_wire(
            ChatRequest(model="m", messages=({"role": "user", "content": f"q{i}"},), max_tokens=8)
        )
        for i in range(n)
    ]


def test_the_ledger_refuses_what_the_scope_cannot_pay_for_and_settles_the_rest(
    broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    engine = _engine(broker, llm_server, tmp_path)
    # a run's budget of 2 calls under an unlimited session: the third item is refused by the run's budget
    scope = {"budgets": _chain(("session", {}, {}), ("run", {"max_calls": 2}, {})), "owner": "cell-1"}
    frames = _collect(
        broker,
        {"op": "batch", "id": 2, "engine": engine, "scope": scope, "concurrency": 1, "items": _items(3)},
    )
    results = {f["item"]: f for f in frames if "item" in f}
    errors = [f["error"] for f in results.values() if "error" in f]
    assert sorted(results) == [0, 1, 2] and len(errors) == 1, frames
    refusal = errors[0]
    assert refusal["kind"] == "budget" and refusal["limit"] == "max_calls" and refusal["scope"] == "run"
    assert "the call was not sent" in refusal["message"]
    assert len(llm_server.requests) == 2  # the refused item never reached the provider
    starts = [f for f in frames if f.get("event") == "start"]
    assert len(starts) == 2 and all(len(f["fields"]["reserved"]) == 3 for f in starts)
    charged = [f["charge"] for f in results.values() if "charge" in f]
    assert len(charged) == 2 and all(c[0] > 0 and c[1] > 0 for c in charged)
    # the budget snapshot frame: what the ledger settled, per scope
    snap = _ask(broker, {"op": "budget", "id": 3, "scopes": ["session", "run"]})["budgets"]
    assert snap["run"]["calls"] == 2 and snap["run"]["refused"] == 1
    assert snap["session"]["calls"] == 2 and snap["session"]["refused"] == 0
    assert snap["run"]["reserved"]["calls"] == 0
    assert snap["run"]["input_tokens"] == sum(c[0] for c in charged)
    assert _ask(broker, {"op": "status", "id": 4})["paid_by"] == {"owner:cell-1": 2}


def test_a_budget_new_to_the_ledger_starts_from_what_the_kernel_settled(
    broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    """A restarted broker has an empty ledger: the kernel's settled figures come with the chain, so a
    restart cannot reset what a scope has spent."""
    engine = _engine(broker, llm_server, tmp_path)
    used = {"calls": 5, "input_tokens": 50, "output_tokens": 50, "usd": 0.0}
    scope = {"budgets": _chain(("s", {"max_calls": 6}, used))}
    frames = _collect(
        broker,
        {"op": "batch", "id": 2, "engine": engine, "scope": scope, "concurrency": 2, "items": _items(2)},
    )
    outcomes = [f for f in frames if "item" in f]
    assert sum("response" in f for f in outcomes) == 1 and sum("error" in f for f in outcomes) == 1
    assert _ask(broker, {"op": "budget", "id": 3, "scopes": ["s"]})["budgets"]["s"]["calls"] == 6


def test_a_malformed_budget_chain_fails_the_batch_clearly(
    broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    engine = _engine(broker, llm_server, tmp_path)
    scope = {"budgets": _chain(("s", {"max_usd": "lots"}, {}))}
    reply = _ask(broker, {"op": "batch", "id": 2, "engine": engine, "scope": scope, "items": _items(1)})
    assert reply["error"]["kind"] == "llm" and "max_usd must be a number" in reply["error"]["message"]
    assert llm_server.requests == []


def test_a_reply_that_cannot_be_framed_fails_only_its_item(
    broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    """Frames are encoded when the loop turn's messages go out together; a reply whose text cannot be
    encoded (a lone surrogate, which JSON escapes allow) still fails only its own item, with a reason."""
    llm_server.when("q1", Fault.odd_reply(_openai_text("bad \ud800 text")))
    engine = _engine(broker, llm_server, tmp_path)
    scope = {"budgets": _chain(("s", {}, {}))}
    frames = _collect(
        broker,
        {"op": "batch", "id": 2, "engine": engine, "scope": scope, "concurrency": 3, "items": _items(3)},
    )
    results = {f["item"]: f for f in frames if "item" in f}
    assert sorted(results) == [0, 1, 2], frames
    assert results[0]["response"]["text"] == "q0" and results[2]["response"]["text"] == "q2"
    assert results[1]["error"]["kind"] == "llm" and "UnicodeEncodeError" in results[1]["error"]["message"]
    assert frames[-1] == {"id": 2, "done": 3}
    assert _ask(broker, {"op": "status", "id": 3})["paid"]["calls"] == 3  # it was answered: it is paid for


def test_a_fan_out_runs_at_most_its_concurrency_and_starts_items_in_order(
    broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    engine = _engine(broker, llm_server, tmp_path)
    llm_server.hold_until_in_flight(3)  # 60 s if fewer than 3 are ever in flight at once
    scope = {"budgets": _chain(("s", {}, {}))}
    frames = _collect(
        broker,
        {"op": "batch", "id": 2, "engine": engine, "scope": scope, "concurrency": 3, "items": _items(10)},
    )
    assert sorted(f["item"] for f in frames if "response" in f) == list(range(10)), frames
    assert llm_server.max_in_flight == 3
    assert [f["index"] for f in frames if f.get("event") == "start"] == list(range(10))


def _batch(broker: socket.socket, engine: int, rid: int, prompts: list[str], concurrency: int = 1) -> dict:
    items = [
        request_to_wire(ChatRequest(model="m", messages=({"role": "user", "content": p},), max_tokens=8))
        for p in prompts
    ]
    scope = {"budgets": _chain(("s", {}, {}))}
    message = {"op": "batch", "id": rid, "engine": engine, "scope": scope, "concurrency": concurrency}
    frames = _collect(broker, {**message, "items": items})
    return {f["item"]: f for f in frames if "item" in f}


def test_a_fan_out_looks_its_items_up_at_once_and_a_repeat_at_its_turn(
    broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    """The broker looks a fan-out's items up in the cache in one operation; an item repeating an earlier
    one is looked up when its turn comes, so it finds the answer the earlier one recorded (not paid twice)."""
    fields = _fields(llm_server.openai_base_url, key_ref("X"), tmp_path, cache="readwrite")
    engine = int(_ask(broker, {"op": "engine", "id": 1, "fields": fields})["engine"])
    first = _batch(broker, engine, 2, ["a", "b", "a"])
    assert [first[i]["response"]["text"] for i in range(3)] == ["a", "b", "a"]
    assert "cached" not in first[0] and "cached" not in first[1] and first[2].get("cached"), first
    assert len(llm_server.requests) == 2
    again = _batch(broker, engine, 3, ["b", "c", "a", "c"], concurrency=4)
    assert [again[i]["response"]["text"] for i in range(4)] == ["b", "c", "a", "c"]
    assert again[0].get("cached") and again[2].get("cached") and "cached" not in again[1], again
    assert [r.last_user for r in llm_server.requests[2:]].count("c") in (1, 2)  # a repeat in one wave: 1–2
    # replay mode: recorded items are answered, the others fail alone with a replay miss, nothing is sent
    sent = len(llm_server.requests)
    replay = _fields(llm_server.openai_base_url, key_ref("X"), tmp_path, cache="replay")
    engine = int(_ask(broker, {"op": "engine", "id": 4, "fields": replay})["engine"])
    replayed = _batch(broker, engine, 5, ["a", "never recorded", "b"], concurrency=3)
    assert replayed[0]["response"]["text"] == "a" and replayed[2]["response"]["text"] == "b"
    assert replayed[1]["error"]["kind"] == "replay_miss", replayed[1]
    assert len(llm_server.requests) == sent


def test_a_kernel_describing_endless_clients_is_refused_past_the_cap(
    broker: socket.socket, llm_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlm_kernel.broker.server as server

    monkeypatch.setattr(server, "MAX_ENGINES", 2)
    url = llm_server.openai_base_url

    def describe(rid: int, timeout: float) -> dict[str, Any]:
        fields = _fields(url, key_ref("X"), tmp_path, timeout=timeout)
        return _ask(broker, {"op": "engine", "id": rid, "fields": fields})

    answers = [describe(10 + i, 5.0 + i) for i in range(3)]
    assert "engine" in answers[0] and "engine" in answers[1]
    assert "already serves 2 different client settings" in answers[2]["error"]["message"], answers[2]
    again = _ask(
        broker,
        {
            "op": "engine",
            "id": 20,
            "fields": _fields(llm_server.openai_base_url, key_ref("X"), tmp_path, timeout=5.0),
        },
    )
    assert again["engine"] == answers[0]["engine"]  # a known one is still served
