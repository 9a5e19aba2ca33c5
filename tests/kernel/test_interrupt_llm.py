"""An interrupt cancels every model call in flight, also those another thread waits on (sub-RLM workers)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlm_kernel import kernel as rlm_kernel_module
from rlm_kernel.llm import LLMCancelled
from rlm_kernel.llm import event_loop as llm_loop
from tests.kernel_client import KernelHarness
from tests.llm.conftest import MakeClient, make_client  # noqa: F401 - fixture
from tests.llm_server import LLMTestServer, Reply
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl


def wait_in_thread(fn) -> tuple[threading.Thread, dict]:  # noqa: ANN001
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - inspected by the test
            outcome["error"] = exc
        outcome["at"] = time.monotonic()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    return worker, outcome


def wait_for_requests(server: LLMTestServer, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(server.requests) < n:
        assert time.monotonic() < deadline, f"the server got {len(server.requests)} of {n} requests"
        time.sleep(0.05)


def test_the_kernels_interrupt_handler_cancels_calls_other_threads_wait_on(
    make_client: MakeClient,  # noqa: F811
    llm_server: LLMTestServer,
) -> None:
    llm_server.latency = 30
    client = make_client()
    worker, outcome = wait_in_thread(lambda: client.complete_batch(["a", "b", "c"]))
    wait_for_requests(llm_server, 3)
    interrupted_at = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        rlm_kernel_module._interrupt(signal.SIGINT, None)  # what SIGINT runs while a cell executes
    worker.join(5)
    assert isinstance(outcome.get("error"), LLMCancelled), outcome
    assert outcome["at"] - interrupted_at < 1.5
    llm_server.latency = 0
    assert client.complete("still usable").text == "still usable"


def test_cancel_all_soon_takes_no_lock_in_the_interrupted_thread(
    make_client: MakeClient,  # noqa: F811
    llm_server: LLMTestServer,
) -> None:
    llm_server.latency = 30
    client = make_client()
    worker, outcome = wait_in_thread(lambda: client.complete("slow"))
    wait_for_requests(llm_server, 1)
    with llm_loop._lock:  # noqa: SLF001 - a signal arriving while this thread is inside submit()
        assert llm_loop.cancel_all_soon()
    worker.join(5)
    assert isinstance(outcome.get("error"), LLMCancelled), outcome


@pytest.fixture
def slow_children(tmp_path: Path) -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    server = LLMTestServer().start()
    (tmp_path / "none.toml").write_text("")
    env = {**llm_env(server), "RLM_CONFIG": str(tmp_path / "none.toml"), "RLM_DISPLAY": "text"}
    kernel = KernelHarness(env=env)
    try:
        yield server, kernel
    finally:
        kernel.shutdown()
        server.stop()


def test_interrupt_during_rlm_query_batched_stops_the_sub_rlms(
    slow_children: tuple[LLMTestServer, KernelHarness],
) -> None:
    server, kernel = slow_children
    fan_out = "parts = llm_query_batched(['x ' + context, 'y ' + context])\nFINAL(parts[0])"
    server.reply_with(
        Script(root=[], sub=[repl(fan_out), repl(fan_out)], child=lambda rec: Reply("late", delay=60.0))
    )
    msg_id = kernel.kc.execute("answers = rlm_query_batched(['task one', 'task two'])")
    # both sub-RLMs' root calls (they run concurrently), then both blocks' two slow child calls each: a block
    # waiting for its calls lets the other sub-RLM's block run (issue 31)
    wait_for_requests(server, 6)
    interrupted_at = time.monotonic()
    kernel.interrupt()
    ex = kernel.collect(msg_id, timeout=30)
    took = time.monotonic() - interrupted_at
    assert ex.status == "error" and ex.error_name == "KeyboardInterrupt", ex
    assert took < 15, took  # the child replies are 60 s away; typical well under 1 s, generous when busy
    assert len(server.requests) == 6  # nothing sent after the interrupt
    summary = [line for line in ex.stdout.splitlines() if line.startswith("fan-out (2 sub-RLMs")]
    assert (
        len(summary) == 1 and "0/2 done · 0 failed · 0 cached · 2 cancelled · 2 nested fan-outs" in summary[0]
    ), summary
    assert kernel.is_alive()
    server.reset()
    again = kernel.execute("llm_query('after the interrupt')", timeout=30)
    assert again.ok and again.result == "'after the interrupt'", again
