"""Fixtures for in-process REPL tests: the real LLM client pointed at the local test server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm_server import LLMTestServer


def llm_env(server: LLMTestServer) -> dict[str, str]:
    """Environment that points the real client at `server` (no cache, one model name, one retry)."""
    return {
        "RLM_PROVIDER": "openai",
        "RLM_BASE_URL": server.openai_base_url,
        "RLM_API_KEY": "sk-test-key",
        "RLM_MODEL": "test-model",
        "RLM_CACHE": "off",
        "RLM_MAX_RETRIES": "0",
    }


@pytest.fixture
def client_on_server(llm_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMTestServer]:
    for key, value in llm_env(llm_server).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    yield llm_server  # the test's own LLM session (tests/conftest.py) builds its client from this env
