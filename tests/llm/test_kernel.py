"""The LLM layer inside a real `rlm` kernel: %rlm set/show/providers, helpers reach the server, interrupts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.kernel_client import KernelHarness
from tests.llm.conftest import PLANTED_KEY
from tests.llm_server import Fault, LLMTestServer


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer() as s:
        yield s


@pytest.fixture(scope="module")
def kernel(server: LLMTestServer) -> Iterator[KernelHarness]:
    env = {
        "RLM_BASE_URL": server.openai_base_url,
        "RLM_API_KEY": PLANTED_KEY,
        "RLM_MODEL": "kernel-model",
        "RLM_CACHE": "off",
    }
    harness = KernelHarness(env=env, remove_env=("RLM_CONFIG", "OPENAI_API_KEY", "RLM_PROVIDER"))
    try:
        yield harness
    finally:
        harness.shutdown()


@pytest.fixture(autouse=True)
def _fresh(server: LLMTestServer) -> None:
    server.reset()


def test_show_and_providers_never_show_the_key(kernel: KernelHarness, server: LLMTestServer) -> None:
    shown = kernel.execute("%rlm show")
    assert shown.ok, shown
    text = shown.all_text
    assert "kernel-model" in text and server.openai_base_url in text and "env RLM_API_KEY" in text
    providers = kernel.execute("%rlm providers")
    assert providers.ok and "▶ openai" in providers.all_text
    for ex in (shown, providers):
        assert PLANTED_KEY not in str(ex.messages)


def test_rlm_set_changes_the_next_call(kernel: KernelHarness, server: LLMTestServer) -> None:
    ex = kernel.execute('%rlm set model_fast=set-in-cell\nanswer = llm_query("ping", model="fast")\nanswer')
    assert ex.ok, ex
    assert "ping" in ex.all_text
    assert [r.model for r in server.requests] == ["set-in-cell"]
    bad = kernel.execute("%rlm set concurency=3")
    assert not bad.ok and "did you mean 'concurrency'" in bad.all_text
    kernel.execute("%rlm set model_fast=")


def test_provider_error_in_a_cell_carries_no_key(kernel: KernelHarness, server: LLMTestServer) -> None:
    server.queue(Fault.unauthorized(echo_key=True))
    ex = kernel.execute('llm_query("hello")')
    assert not ex.ok
    assert "Incorrect API key provided" in ex.all_text
    assert PLANTED_KEY not in str(ex.messages)


def test_interrupt_cancels_a_fan_out_and_the_next_cell_works(
    kernel: KernelHarness, server: LLMTestServer
) -> None:
    server.latency = 30  # a fan-out that waited for its replies would take ≥ 30 s
    threading.Timer(1.0, kernel.interrupt).start()
    t0 = time.monotonic()
    ex = kernel.execute('llm_query_batched(["q %d" % i for i in range(40)])', timeout=60)
    elapsed = time.monotonic() - t0
    assert not ex.ok and elapsed < 15.0, (elapsed, ex)  # typical 1.2 s; generous for a busy machine
    assert len(server.requests) <= 16  # only the first wave (default concurrency) was ever sent
    server.latency = 0
    again = kernel.execute('llm_query("after the interrupt")')
    assert again.ok and "after the interrupt" in again.all_text
