"""Fan-out through the LLM broker process: N calls at latency L and concurrency C, wall time against the
ideal, client CPU per call summed over the calling process and the broker; the reference RLM library (`rlms`,
`LocalREPL.llm_query_batched` through its LM handler) against the same server as a same-run baseline.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from benchmarks.common import Figure, start_test_server, timed_echo_batch
from rlm_kernel.llm import Budget, LLMClient, load_config

__all__ = ["run"]

LATENCY = 0.05
CONCURRENCY = 64


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process `pid`."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure_here(url: str, n: int, cache_dir: str) -> tuple[float, float]:
    """(wall s, CPU s per call) for one batch made in this process (no broker)."""
    from benchmarks.bench_fanout import _measure

    return _measure(url, "aiohttp", n, cache_dir)


def _measure_broker(url: str, n: int, cache_dir: str) -> tuple[float, float, float]:
    """(wall s, CPU s per call here, CPU s per call in the broker) for one batch through a broker."""
    from rlm_kernel.broker.supervisor import spawn_supervisor_process
    from rlm_kernel.llm import LLMSession
    from rlm_kernel.llm.broker_handover import key_ref, request_broker
    from rlm_kernel.llm.broker_link import BrokerLink

    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))
    }
    env.update(RLM_BASE_URL=url + "/v1", RLM_API_KEY="bench-key", XDG_CONFIG_HOME=cache_dir)
    control = spawn_supervisor_process(env)
    sock, pid = request_broker(control)
    session = LLMSession(link=BrokerLink(control, sock, pid))
    try:
        config = load_config(
            environ={},
            use_settings=False,
            provider="openai",
            base_url=url + "/v1",
            api_key=key_ref("RLM_API_KEY"),
            model="bench",
            cache="off",
            cache_dir=cache_dir,
            concurrency=CONCURRENCY,
            max_connections=CONCURRENCY,
            max_retries=0,
            prices={"bench": (0.0, 0.0)},
        )
        client = LLMClient(config, session=session)
        client.complete_batch([f"warm up {i}" for i in range(CONCURRENCY)], budget=Budget())
        return timed_echo_batch(
            lambda prompts: [c.text for c in client.complete_batch(prompts, budget=Budget())],
            n,
            other_cpu=lambda: _proc_cpu(pid),
        )
    finally:
        session.close()  # closes the link: the broker and its supervisor exit


def _measure_rlms(url: str, n: int) -> tuple[float, float] | None:
    """(wall s, CPU s per call) of `rlms` LocalREPL.llm_query_batched; None when `rlms` is not installed.

    No warm-up batch: its handler runs each batch on a new event loop, and a second batch on the same client
    fails ("Event loop is closed", rlms 0.1.3), so every batch opens its connections anyway."""
    try:
        from rlm.clients.openai import OpenAIClient
        from rlm.core.lm_handler import LMHandler
        from rlm.environments.local_repl import LocalREPL
    except ImportError:
        return None
    handler = LMHandler(
        OpenAIClient(api_key="bench-key", model_name="bench", base_url=url + "/v1"),
        batch_max_concurrent=CONCURRENCY,
    )
    handler.start()
    try:
        repl = LocalREPL(lm_handler_address=handler.address)
        # the helper its REPL binds to llm_query_batched
        wall, cpu, _ = timed_echo_batch(repl._llm_query_batched, n)  # noqa: SLF001
        return wall, cpu
    finally:
        handler.stop()


def run(quick: bool) -> list[Figure]:
    n = 640 if quick else 1000
    ideal = math.ceil(n / CONCURRENCY) * LATENCY
    proc, url = start_test_server(LATENCY)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            wall, here, broker = _measure_broker(url, n, tmp)
            direct_wall, direct_cpu = _measure_here(url, n, tmp)
        theirs = _measure_rlms(url, n)
    finally:
        proc.terminate()
        proc.wait(10)
    setup = f"N={n}, L={LATENCY * 1000:.0f} ms, C={CONCURRENCY}; server in a separate process"
    figures = [
        Figure(
            "fan-out wall time through the broker",
            wall,
            "s",
            baseline=ideal,
            baseline_name="ideal ceil(N/C)·L",
            target="≤1.3× ideal",
            met=wall <= 1.3 * ideal,
            note=f"{setup}; in-process client, same run: {direct_wall:.3f} s",
        ),
        Figure(
            "client CPU per call through the broker (caller + broker)",
            (here + broker) * 1000,
            "ms",
            baseline=direct_cpu * 1000,
            baseline_name="in-process client, same run",
            target="≤0.6 ms",
            met=here + broker <= 0.0006,
            note=f"{setup}; caller {here * 1000:.2f} ms + broker {broker * 1000:.2f} ms",
        ),
    ]
    if theirs is None:
        figures.append(
            Figure(
                "rlms LocalREPL.llm_query_batched wall time",
                float("nan"),
                "s",
                note="rlms not installed (pip install rlms)",
            )
        )
    else:
        figures += [
            Figure(
                "rlms LocalREPL.llm_query_batched wall time",
                theirs[0],
                "s",
                baseline=wall,
                baseline_name="through our broker, same run",
                target="> 1× (we stay ahead)",
                met=theirs[0] > wall,
                note=f"{setup}; rlms LM handler with batch_max_concurrent={CONCURRENCY}",
            ),
            Figure(
                "rlms client CPU per call",
                theirs[1] * 1000,
                "ms",
                baseline=(here + broker) * 1000,
                baseline_name="through our broker, same run",
                note="rlms: LM handler thread + openai client, one process",
            ),
        ]
    return figures
