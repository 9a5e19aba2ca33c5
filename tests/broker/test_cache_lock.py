"""A cache locked by another process neither stalls a fan-out nor lets an interrupt reach the next cell."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_client import KernelHarness
from tests.llm_server import LLMTestServer


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer() as s:
        yield s


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def kernel(server: LLMTestServer, cache_dir: Path) -> Iterator[KernelHarness]:
    env = {
        "RLM_BASE_URL": server.openai_base_url,
        "RLM_API_KEY": "sk-lock",
        "RLM_MODEL": "m",
        "RLM_CACHE": "readwrite",
        "RLM_CACHE_DIR": str(cache_dir),
    }
    harness = KernelHarness(env=env, remove_env=("RLM_CONFIG", "OPENAI_API_KEY", "RLM_PROVIDER"))
    try:
        assert harness.execute('llm_query("create the cache file")').ok
        yield harness
    finally:
        harness.shutdown()


@pytest.fixture
def locked(cache_dir: Path) -> Iterator[sqlite3.Connection]:
    """Another process's view: a write transaction held on the cache file (every writer must wait)."""
    conn = sqlite3.connect(cache_dir / "llm-cache.sqlite3", timeout=5, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def _session_calls(kernel: KernelHarness) -> int:
    text = kernel.execute("%rlm budget").all_text
    match = re.search(r"(\d+) calls", text)
    assert match, text
    return int(match.group(1))


def test_answers_that_arrived_before_an_interrupt_are_counted(
    kernel: KernelHarness, server: LLMTestServer, locked: sqlite3.Connection
) -> None:
    """The answers arrive at once; recording them waits for the locked cache; the interrupt comes meanwhile:
    the calls were paid for, so the session budget counts them (settled when the broker reports them)."""
    before = _session_calls(kernel)
    server.reset()
    threading.Timer(2.0, kernel.interrupt).start()
    ex = kernel.execute('llm_query_batched(["paid %d" % i for i in range(8)])', timeout=60)
    assert not ex.ok and "KeyboardInterrupt" in ex.all_text, ex
    assert len(server.requests) == 8
    deadline = time.monotonic() + 20
    while _session_calls(kernel) - before < 8 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _session_calls(kernel) - before == 8


def test_a_locked_cache_does_not_stall_a_fan_out(
    kernel: KernelHarness, server: LLMTestServer, locked: sqlite3.Connection
) -> None:
    server.reset()
    t0 = time.monotonic()
    ex = kernel.execute('r = llm_query_batched(["locked %d" % i for i in range(40)]); len(r)', timeout=120)
    elapsed = time.monotonic() - t0
    assert ex.ok and ex.result == "40", ex
    assert elapsed < 25, elapsed  # SQLite alone would wait 30 s per write
    assert "not recorded in the LLM cache" in ex.all_text, ex  # the cell is told, not only stderr
    assert len(server.requests) == 40


def test_interrupt_with_a_locked_cache_leaves_the_next_cell_alone(
    kernel: KernelHarness, server: LLMTestServer, locked: sqlite3.Connection
) -> None:
    server.reset()
    server.latency = 3
    threading.Timer(1.0, kernel.interrupt).start()
    ex = kernel.execute('llm_query_batched(["interrupted %d" % i for i in range(20)])', timeout=60)
    assert not ex.ok and "KeyboardInterrupt" in ex.all_text, ex
    server.latency = 0.5
    nxt = kernel.execute('llm_query_batched(["next %d" % i for i in range(4)])', timeout=60)
    assert nxt.ok and "next 3" in nxt.all_text, nxt
    server.latency = 0
