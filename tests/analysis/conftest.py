"""Fixtures for the analysis tests: the session LLM client on the local test server, one model per tier.

Map and reduce requests can then be told apart by the model they name.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llm_server import LLMTestServer

TIER_MODELS = {"fast": "model-fast", "balanced": "model-balanced", "powerful": "model-powerful"}


def tier_env(server: LLMTestServer) -> dict[str, str]:
    """Environment pointing the real client at `server`, a distinct model per tier, no cache, no retries."""
    return {
        "RLM_PROVIDER": "openai",
        "RLM_BASE_URL": server.openai_base_url,
        "RLM_API_KEY": "sk-test-key",
        "RLM_MODEL_FAST": TIER_MODELS["fast"],
        "RLM_MODEL_BALANCED": TIER_MODELS["balanced"],
        "RLM_MODEL_POWERFUL": TIER_MODELS["powerful"],
        "RLM_CACHE": "off",
        "RLM_MAX_RETRIES": "0",
        "RLM_MAX_TOKENS": "100000",
    }


@pytest.fixture
def session_llm(llm_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMTestServer]:
    """The session client (`get_client()`) and an unlimited session budget, on the local test server."""
    for key, value in tier_env(llm_server).items():
        monkeypatch.setenv(key, value)
    for key in ("RLM_CONFIG", "RLM_MODEL"):
        monkeypatch.delenv(key, raising=False)
    yield llm_server  # the test's own LLM session (tests/conftest.py) builds its client from this env
