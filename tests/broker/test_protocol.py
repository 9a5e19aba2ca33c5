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
from rlm_kernel.broker.protocol import recv_frame, request_to_wire, send_frame
from rlm_kernel.broker.server import Broker
from rlm_kernel.broker.supervisor import key_ref
from rlm_kernel.llm.providers.base import ChatRequest
from tests.llm_server import LLMTestServer

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
    send_frame(sock, message)
    while True:
        reply = recv_frame(sock)
        assert reply is not None
        if "event" not in reply:
            return reply


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
    answer = _ask(broker, {"op": "send", "id": 2, "engine": engine, "request": req})
    assert answer["id"] == 2 and answer["response"]["text"] == "hi"
    assert llm_server.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    status = _ask(broker, {"op": "status", "id": 3})
    assert status["ledger"]["calls"] == 1
    assert KEY not in str(status)
