"""Widgets: what live fan-out views cost a batch (client CPU per call) and how many view updates they send.

A real `complete_batch` against the test server (own process), with and without the widget controller.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from benchmarks.common import Figure, start_test_server
from rlm_kernel.llm import Budget, LLMClient, load_config
from rlm_kernel.llm.events import CallEvent, EventBus, bus
from rlm_kernel.widgets.controller import FanoutController
from rlm_kernel.widgets.fanout import FanoutView

__all__ = ["run"]

LATENCY = 0.02
CONCURRENCY = 32


class _NullSink:
    """Shows nothing: measures the controller and the ipywidgets trait updates, not a frontend."""

    def parent_for(self, owner: str | None) -> Any:
        return None

    def show(self, widget: Any, parent: Any, fallback: str = "") -> None:
        return None

    def write(self, text: str, parent: Any) -> None:
        return None


def _client(url: str, cache_dir: str) -> LLMClient:
    config = load_config(
        environ={}, use_settings=False, provider="openai", base_url=url + "/v1", model="bench", cache="off",
        cache_dir=cache_dir, concurrency=CONCURRENCY, max_connections=CONCURRENCY, max_retries=0,
        prices={"bench": (0.0, 0.0)},
    )  # fmt: skip
    return LLMClient(config)


def _batch_cpu(client: LLMClient, n: int) -> float:
    """Client CPU seconds per call for one batch of `n` calls."""
    prompts = [f"prompt number {i} with a few words" for i in range(n)]
    cpu0 = time.process_time()
    client.complete_batch(prompts, budget=Budget())
    return (time.process_time() - cpu0) / n


def _count_updates() -> tuple[list[int], Any]:
    counts = [0]
    original = FanoutView.update

    def counting(self: FanoutView, snap: Any) -> None:
        counts[0] += 1
        original(self, snap)

    FanoutView.update = counting  # type: ignore[method-assign]
    return counts, original


def _synthetic_event_cost(n: int) -> tuple[float, float]:
    """(µs per event with the controller in widgets mode, µs per event on a bus with no subscriber)."""
    events = [CallEvent(kind="batch_start", batch_id="b", total=n)]
    for i in range(n):
        events.append(CallEvent(kind="start", batch_id="b", call_id=str(i), index=i))
        events.append(CallEvent(kind="finish", batch_id="b", call_id=str(i), index=i, input_tokens=9))
    events.append(CallEvent(kind="batch_end", batch_id="b"))

    def emit_all(b: EventBus) -> float:
        t0 = time.perf_counter()
        for e in events:
            b.emit(e)
        return (time.perf_counter() - t0) / len(events) * 1e6

    bare = EventBus()
    baseline = min(emit_all(bare) for _ in range(3))
    costs = []
    for _ in range(3):
        b = EventBus()
        FanoutController(_NullSink(), mode=lambda: "widgets").subscribe(b.subscribe)
        costs.append(emit_all(b))
    return min(costs), baseline


def run(quick: bool) -> list[Figure]:
    n = 500 if quick else 2000
    proc, url = start_test_server(LATENCY)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            client = _client(url, tmp)
            try:
                client.complete_batch([f"warm {i}" for i in range(CONCURRENCY)], budget=Budget())
                base_runs: list[float] = []
                widget_runs: list[float] = []
                updates, wall = 0, 0.0
                for rep in range(3):  # interleaved, so load from other processes hits both alike
                    base_runs.append(_batch_cpu(client, n))
                    controller = FanoutController(_NullSink(), mode=lambda: "widgets").subscribe(
                        bus.subscribe
                    )
                    counts, original = _count_updates()
                    try:
                        t0 = time.perf_counter()
                        widget_runs.append(_batch_cpu(client, n))
                        if rep == 0:
                            wall = time.perf_counter() - t0
                            updates = counts[0] - 1  # the first update builds the view before it is shown
                    finally:
                        FanoutView.update = original  # type: ignore[method-assign]
                        controller.close()
                base_cpu, widget_cpu = min(base_runs), min(widget_runs)
            finally:
                client.close()
    finally:
        proc.terminate()
        proc.wait(10)
    per_event, bare_event = _synthetic_event_cost(2000 if quick else 10_000)
    setup = f"N={n}, L={LATENCY * 1000:.0f} ms, C={CONCURRENCY}; server in its own process; widgets mode"
    allowed_updates = wall * 10 + 2
    return [
        Figure(
            "client CPU per call, live fan-out widget on",
            widget_cpu * 1000,
            "ms",
            baseline=base_cpu * 1000,
            baseline_name="no widget subscribed, same run",
            target="≤1.25× baseline",
            met=widget_cpu <= 1.25 * base_cpu,
            note=setup,
        ),
        Figure(
            "fan-out widget updates per batch",
            updates,
            "updates",
            baseline=n,
            baseline_name="one update per call",
            target=f"≤10/s of batch time (≤{allowed_updates:.0f})",
            met=updates <= allowed_updates,
            note=f"{setup}; batch took {wall:.2f} s",
        ),
        Figure(
            "event handling, controller in widgets mode",
            per_event,
            "µs/event",
            baseline=bare_event,
            baseline_name="bus with no subscriber",
            note="synthetic start/finish events, no network",
        ),
    ]
