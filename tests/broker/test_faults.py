"""Failures stay per item: odd replies, no-content replies and a dead broker, through a real kernel."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from tests.broker.procs import broker_pids
from tests.kernel_client import KernelHarness
from tests.llm_server import Fault, LLMTestServer

BATCH = """
try:
    out = llm_query_batched(["ok 0", "odd 1", "ok 2", "odd 3", "ok 4", "odd 5", "ok 6", "odd 7", "ok 8",
                             "odd 9", "ok 10"])
except QueryBatchError as e:
    out = e.results
    errs = e.errors
else:
    errs = {}
"""
ODD = [
    ("odd 1", Fault.odd_usage("n/a", "usage n/a")),
    ("odd 3", Fault.odd_usage("11.0", "usage eleven")),
    ("odd 5", Fault.null_parts()),
    ("odd 7", Fault.object_content()),
    ("odd 9", Fault.missing_message()),
]


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer() as s:
        yield s


@pytest.fixture(scope="module")
def kernel(server: LLMTestServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelHarness]:
    env = {
        "RLM_BASE_URL": server.openai_base_url,
        "RLM_API_KEY": "sk-faults",
        "RLM_MODEL": "m",
        "RLM_CACHE": "readwrite",
        "RLM_CACHE_DIR": str(tmp_path_factory.mktemp("cache")),
    }
    harness = KernelHarness(env=env, remove_env=("RLM_CONFIG", "OPENAI_API_KEY", "RLM_PROVIDER"))
    try:
        yield harness
    finally:
        harness.shutdown()


@pytest.fixture(autouse=True)
def _fresh(server: LLMTestServer) -> None:
    server.reset()


def test_odd_replies_fail_only_their_item(kernel: KernelHarness, server: LLMTestServer) -> None:
    for contains, fault in ODD:
        server.when(contains, fault)
    ex = kernel.execute(BATCH + "print(sorted(errs)); out")
    assert ex.ok, ex
    # object content and a missing message fail; odd usage and null parts are read
    assert "[7, 9]" in ex.stdout, ex
    results = kernel.execute("out").result or ""
    for i in (0, 2, 4, 6, 8, 10):
        assert f"'ok {i}'" in results
    assert "'usage n/a'" in results and "'usage eleven'" in results and "'kept part'" in results
    reasons = kernel.execute("print(errs[7]); print(errs[9])").stdout
    assert "no answer text" in reasons and "without `choices[0].message`" in reasons, reasons
    assert len(server.requests) == 11


def test_no_content_replies_are_errors_and_never_cached(kernel: KernelHarness, server: LLMTestServer) -> None:
    server.when("refuse me", Fault.refusal())
    server.when("call a tool", Fault.tool_call())
    code = 'llm_query_batched(["refuse me", "call a tool", "fine"])'
    first = kernel.execute(code)
    assert not first.ok and "2 of 3 prompts failed" in first.all_text and "no answer text" in first.all_text
    server.reset()
    second = kernel.execute(code)  # nothing was recorded for the two: they are asked again (and now answer)
    assert second.ok, second
    assert sorted(r.last_user for r in server.requests) == ["call a tool", "refuse me"]


def test_broker_death_mid_batch_fails_the_cell_clearly_and_the_next_cell_works(
    kernel: KernelHarness, server: LLMTestServer
) -> None:
    kernel_pid = kernel.km.provisioner.process.pid
    assert kernel.execute('llm_query("warm up")').ok
    (before,) = broker_pids(kernel_pid)
    server.latency = 30  # a cell that waited for the replies instead of the dead broker would take ≥ 30 s
    threading.Timer(1.0, os.kill, (before, signal.SIGKILL)).start()
    t0 = time.monotonic()
    ex = kernel.execute('llm_query_batched(["slow %d" % i for i in range(8)])', timeout=60)
    assert time.monotonic() - t0 < 15, ex  # typical ~1.2 s; generous for a busy machine
    assert not ex.ok and "the LLM broker process" in ex.all_text and "exited" in ex.all_text, ex
    server.latency = 0
    after = kernel.execute('llm_query("after the restart")')
    assert after.ok and "after the restart" in after.all_text, after
    (new,) = broker_pids(kernel_pid)
    assert new != before


def test_a_ten_megabyte_reply_is_one_item(kernel: KernelHarness, server: LLMTestServer) -> None:
    server.when("big one", Fault.big(10 * 1024 * 1024))
    ex = kernel.execute('r = llm_query_batched(["small", "big one", "small too"]); [len(x) for x in r]')
    assert ex.ok and ex.result == "[5, 10485760, 9]", ex
