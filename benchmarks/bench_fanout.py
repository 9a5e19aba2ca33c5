"""Fan-out: N calls at latency L and concurrency C through `LLMClient.complete_batch`: aiohttp vs plain httpx.

The server (`benchmarks/echo_server.py`, lean enough not to be the limit) runs in its own process, so this
process's CPU time is the client's alone (both transports).
"""

from __future__ import annotations

import math
import tempfile

from benchmarks import echo_server
from benchmarks.common import Figure, timed_echo_batch
from rlm_kernel.llm import Budget, LLMClient, load_config

__all__ = ["run"]

LATENCY = 0.05
CONCURRENCY = 64


def _measure(url: str, transport: str, n: int, cache_dir: str) -> tuple[float, float]:
    """(wall seconds, client CPU seconds per call) for one batch of `n` calls."""
    config = load_config(
        environ={},
        use_settings=False,
        provider="openai",
        base_url=url + "/v1",
        model="bench",
        cache="off",
        cache_dir=cache_dir,
        concurrency=CONCURRENCY,
        max_connections=CONCURRENCY,
        max_retries=0,
        prices={"bench": (0.0, 0.0)},
    )
    client = LLMClient(config, transport=transport)  # type: ignore[arg-type]
    try:
        client.complete_batch(
            [f"warm up {i}" for i in range(CONCURRENCY)], budget=Budget()
        )  # open connections
        wall, cpu, _ = timed_echo_batch(
            lambda prompts: [c.text for c in client.complete_batch(prompts, budget=Budget())], n
        )
        return wall, cpu
    finally:
        client.close()


def run(quick: bool) -> list[Figure]:
    n = 640 if quick else 1000
    ideal = math.ceil(n / CONCURRENCY) * LATENCY
    proc, url = echo_server.start(LATENCY)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            a_wall, a_cpu = _measure(url, "aiohttp", n, tmp)
            h_wall, h_cpu = _measure(url, "httpx", n, tmp)
    finally:
        proc.terminate()
        proc.wait(10)
    setup = f"N={n}, L={LATENCY * 1000:.0f} ms, C={CONCURRENCY}; server in a separate process"
    return [
        Figure(
            "fan-out wall time (aiohttp transport)",
            a_wall,
            "s",
            baseline=ideal,
            baseline_name="ideal ceil(N/C)·L",
            target="≤1.3× ideal",
            met=a_wall <= 1.3 * ideal,
            note=setup,
        ),
        Figure(
            "client CPU per call (aiohttp transport)",
            a_cpu * 1000,
            "ms",
            baseline=h_cpu * 1000,
            baseline_name="plain httpx, same run",
            target="≤1 ms",
            met=a_cpu <= 0.001,
            note=setup,
        ),
        Figure(
            "fan-out wall time (plain httpx 0.28 transport)",
            h_wall,
            "s",
            baseline=ideal,
            baseline_name="ideal ceil(N/C)·L",
            note="baseline transport, for comparison",
        ),
        Figure(
            "client CPU per call (plain httpx 0.28 transport)",
            h_cpu * 1000,
            "ms",
            baseline=a_cpu * 1000,
            baseline_name="aiohttp, same run",
            note="baseline transport, for comparison",
        ),
    ]
