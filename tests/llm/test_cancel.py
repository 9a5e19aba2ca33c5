"""Cancellation: `cancel_all()` and an interrupt of the waiting thread stop in-flight and queued calls."""

from __future__ import annotations

import _thread
import threading
import time

import pytest

from rlm_kernel.llm import Budget, LLMCancelled
from rlm_kernel.llm import event_loop as llm_loop
from tests.llm.conftest import MakeClient
from tests.llm_server import LLMTestServer


def test_cancel_all_stops_a_batch_within_a_second(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.latency = 10
    client = make_client()
    budget = Budget()
    outcome: dict[str, object] = {}

    def run() -> None:
        t0 = time.monotonic()
        try:
            client.complete_batch([f"p{i}" for i in range(40)], concurrency=8, budget=budget)
        except BaseException as exc:  # noqa: BLE001 - inspected below
            outcome["error"] = exc
        outcome["elapsed"] = time.monotonic() - t0

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 30  # the first wave (8) is in flight: awaited, not assumed after a sleep
    while len(llm_server.requests) < 8 and time.monotonic() < deadline:
        time.sleep(0.02)
    cancelled_at = time.monotonic()
    assert llm_loop.cancel_all() >= 1
    worker.join(15)
    assert not worker.is_alive()
    assert isinstance(outcome["error"], LLMCancelled)
    # replies are 10 s away: a cancel that waited for them would take ≥ 10 s (typical here: ~0.1 s)
    assert time.monotonic() - cancelled_at < 5.0
    assert len(llm_server.requests) == 8  # the 32 queued calls were never sent
    snap = budget.snapshot()
    assert snap["reserved"]["calls"] == 0 and snap["calls"] == 0
    llm_server.latency = 0
    assert client.complete("next call works").text == "next call works"


def test_interrupt_while_waiting_cancels_and_next_call_works(
    make_client: MakeClient, llm_server: LLMTestServer
) -> None:
    llm_server.latency = 10
    client = make_client()
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        client.complete_batch([f"p{i}" for i in range(10)])
    assert time.monotonic() - t0 < 5.0  # replies are 10 s away; typical: 0.3 s timer + ~0.1 s
    deadline = time.monotonic() + 30  # an event-wait: a long deadline costs nothing when it passes
    while llm_loop._active and time.monotonic() < deadline:  # noqa: SLF001 - checking the registry empties
        time.sleep(0.02)
    assert not llm_loop._active  # noqa: SLF001
    llm_server.latency = 0
    assert client.complete("after interrupt").text == "after interrupt"


def test_an_interrupt_queued_behind_a_busy_loop_spares_later_calls() -> None:
    """The interrupt names the calls in flight when it happened; calls submitted after it run to the end."""
    import asyncio
    import concurrent.futures

    holding = threading.Event()

    async def hold_the_loop() -> None:
        holding.set()
        time.sleep(0.5)  # blocks the loop thread, as a slow synchronous step would

    async def later_call() -> str:
        await asyncio.sleep(0.3)
        return "finished"

    async def interrupted_call() -> str:
        await asyncio.sleep(30)
        return "never"

    victim = llm_loop.submit(interrupted_call())
    blocker = llm_loop.submit(hold_the_loop())  # runs after the victim has started (the loop is FIFO)
    assert holding.wait(30)  # the loop is now blocked: awaited, not assumed after a sleep
    assert llm_loop.cancel_all_soon()  # what the kernel's SIGINT handler calls
    spared = llm_loop.submit(later_call())  # the next cell's call, submitted after the interrupt
    assert spared.result(30) == "finished"
    concurrent.futures.wait([victim], timeout=30)
    assert victim.cancelled()
    blocker.result(30)
