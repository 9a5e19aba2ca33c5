"""Fan-out through an LLM gateway: N calls at latency L and concurrency C via a real LiteLLM proxy in front of
the test server, against the same fan-out straight to the server (same run) and the ideal ceil(N/C)·L.

The proxy runs as a gateway team runs it (tests/litellm/proxy.py's `gateway_config`: LiteLLM's production
settings) with one uvicorn worker per core. Besides the wall times, it reports the floor the CPU sets: every
call costs the proxy's CPU plus our client's, and `cores` cores can do no better than
N × (proxy + client CPU per call) / cores — above 1.5× ideal, the target is out of reach on this machine
whatever the load.

Needs the proxy's own venv (see tests/litellm/proxy.py); without one it says so and reports nothing.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from benchmarks.common import Figure, start_test_server, timed_echo_batch
from rlm_kernel.llm import Budget, LLMClient, load_config
from tests.litellm.proxy import GATEWAY_ENV, INSTALL, Proxy, gateway_config, proxy_command

__all__ = ["run"]

LATENCY = 0.05
CONCURRENCY = 64
MASTER_KEY = "sk-bench-master"


def _client(base_url: str, model: str, cache_dir: str) -> LLMClient:
    config = load_config(
        environ={},
        use_settings=False,
        provider="openai",
        base_url=base_url,
        api_key=MASTER_KEY,
        model=model,
        cache="off",
        cache_dir=cache_dir,
        concurrency=CONCURRENCY,
        max_connections=CONCURRENCY,
        max_retries=0,
        prices={model: (0.0, 0.0)},
    )
    return LLMClient(config)


def _measure(client: LLMClient, n: int, proxy: Proxy | None = None) -> tuple[float, float, float]:
    """(wall s, client CPU s per call, proxy CPU s per call) for one batch of `n` calls."""
    client.complete_batch([f"warm up {i}" for i in range(CONCURRENCY)], budget=Budget())  # open connections
    return timed_echo_batch(
        lambda prompts: [c.text for c in client.complete_batch(prompts, budget=Budget())],
        n,
        other_cpu=proxy.cpu_seconds if proxy else None,
    )


def run(quick: bool) -> list[Figure]:
    command = proxy_command()
    if command is None:
        print(f"   skipped: no LiteLLM proxy installed ({INSTALL})")
        return []
    n = 640 if quick else 1000
    ideal = math.ceil(n / CONCURRENCY) * LATENCY
    cores = os.cpu_count() or 1
    load_start = os.getloadavg()[0]
    server, url = start_test_server(LATENCY)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = gateway_config(
                {
                    "model_list": [
                        {
                            "model_name": "bench",
                            "litellm_params": {
                                "model": "openai/bench",
                                "api_base": url + "/v1",
                                "api_key": "sk-up",
                            },
                        }
                    ],
                    "litellm_settings": {"num_retries": 0},
                    "general_settings": {"master_key": MASTER_KEY},
                }
            )
            proxy = Proxy(command, config, Path(tmp), workers=cores, env=GATEWAY_ENV)
            try:
                direct = _client(url + "/v1", "bench", tmp)
                via = _client(proxy.url + "/v1", "bench", tmp)
                try:
                    d_wall, _, _ = _measure(direct, n)
                    g_wall, g_cpu, p_cpu = _measure(via, n, proxy)
                finally:
                    direct.close()
                    via.close()
            finally:
                proxy.stop()
    finally:
        server.terminate()
        server.wait(10)
    floor = n * (p_cpu + g_cpu) / cores
    setup = (
        f"N={n}, L={LATENCY * 1000:.0f} ms, C={CONCURRENCY}; LiteLLM proxy 1.99.4 with production settings, "
        f"{cores} workers (started in {proxy.start_seconds:.0f} s), server in a separate process; "
        f"load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    )
    return [
        Figure(
            "fan-out wall time through the LiteLLM proxy",
            g_wall,
            "s",
            baseline=ideal,
            baseline_name="ideal ceil(N/C)·L",
            target="≤1.5× ideal",
            met=g_wall <= 1.5 * ideal,
            note=setup,
        ),
        Figure(
            "fan-out wall time through the LiteLLM proxy vs direct",
            g_wall,
            "s",
            baseline=d_wall,
            baseline_name="straight to the server, same run",
            note=setup,
        ),
        Figure(
            "CPU floor of the fan-out through the proxy: N × (proxy + client CPU per call) / cores",
            floor,
            "s",
            baseline=ideal,
            baseline_name="ideal ceil(N/C)·L",
            note=f"{cores} cores; ≤ 1.5× ideal is reachable on them only if this ratio is ≤ 1.5",
        ),
        Figure(
            "LiteLLM proxy CPU per call",
            p_cpu * 1000,
            "ms",
            baseline=g_cpu * 1000,
            baseline_name="our client's CPU per call, same run",
            note=setup,
        ),
    ]
