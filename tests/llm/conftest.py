"""Helpers for LLM-layer tests: clients pointed at the local test server with an isolated configuration.

Every client is built from explicit settings and an empty environment; its cache is in tmp_path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rlm_kernel.llm import LLMClient, load_config
from tests.llm_server import LLMTestServer

PLANTED_KEY = "sk-planted-7f3a9c2e51d84b60a1e2f3c4d5e6f708"

MakeClient = Callable[..., LLMClient]


@pytest.fixture
def make_client(llm_server: LLMTestServer, tmp_path: Path) -> Iterator[MakeClient]:
    """`make_client(provider="openai", **settings)` → an `LLMClient` for `llm_server` (closed afterwards)."""
    clients: list[LLMClient] = []

    def make(provider: str = "openai", **settings: Any) -> LLMClient:
        settings.setdefault("model", f"test-{provider}")
        settings.setdefault("api_key", PLANTED_KEY)
        settings.setdefault("cache", "off")
        settings.setdefault("cache_dir", str(tmp_path / "cache"))
        settings.setdefault("max_retries", 2)
        config = load_config(
            environ={},
            use_settings=False,
            provider=provider,
            base_url=llm_server.url_for(provider),
            **settings,
        )
        client = LLMClient(config)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
