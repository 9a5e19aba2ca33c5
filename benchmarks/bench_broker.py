"""Fan-out through the LLM broker process: N calls at latency L and concurrency C, wall time against the
ideal, client CPU per call summed over the calling process and the broker; the in-process client (no broker)
and the reference RLM library (`rlms`, `LocalREPL.llm_query_batched` through its LM handler) against the same
server as same-run baselines.

The server is `benchmarks/echo_server.py` in its own process (its CPU per call is reported: it must not be the
limit). The broker and in-process batches alternate (3 rounds in `--full`, 1 in quick mode) and each figure is
the median of its rounds; the load average before and after is in the notes, because on a shared 2-core
machine the wall time mostly measures the other jobs.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
from collections.abc import Callable

from benchmarks import echo_server
from benchmarks.common import Figure, timed_echo_batch
from rlm_kernel.llm import Budget, LLMClient, LLMSession, load_config

__all__ = ["run"]

LATENCY = 0.05
CONCURRENCY = 64

_proc_cpu = echo_server.cpu_seconds  # bench_gateway reads its proxy's CPU with it


def _config(url: str, cache_dir: str, api_key: str | None, cache: str = "off") -> object:
    return load_config(
        environ={},
        use_settings=False,
        provider="openai",
        base_url=url + "/v1",
        api_key=api_key,
        model="bench",
        cache=cache,
        cache_dir=cache_dir,
        concurrency=CONCURRENCY,
        max_connections=CONCURRENCY,
        max_retries=0,
        prices={"bench": (0.0, 0.0)},
    )


def _batch(client: LLMClient) -> Callable[[list[str]], list[str]]:
    return lambda prompts: [c.text for c in client.complete_batch(prompts, budget=Budget())]


def _measure(url: str, n: int, rounds: int, cache_dir: str, server_pid: int) -> dict[str, list[float]]:
    """Alternating batches through a broker and in this process (each client warmed up first): per round the
    wall s and CPU s per call of the caller, the broker, the in-process client, and the server in both; then
    one batch through the broker with the cache on (`readwrite`, the default: every call a miss, recorded),
    into a new cache directory each round."""
    from rlm_kernel.broker.supervisor import spawn_supervisor_process
    from rlm_kernel.handover import key_ref, request_broker
    from rlm_kernel.llm.broker_link import BrokerLink

    here = LLMClient(_config(url, cache_dir, None), session=LLMSession())  # no link: calls from this process
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))
    }
    env.update(RLM_BASE_URL=url + "/v1", RLM_API_KEY="bench-key", XDG_CONFIG_HOME=cache_dir)
    env.update(RLM_CACHE_DIR=cache_dir, XDG_STATE_HOME=cache_dir)  # the broker's start-time cache place
    control = spawn_supervisor_process(env)
    sock, pid = request_broker(control)
    session = LLMSession(link=BrokerLink(control, sock, pid))
    out: dict[str, list[float]] = {k: [] for k in ("wall", "caller", "broker", "server", "here_wall", "here")}
    out.update(here_server=[], cached_wall=[], cached_cpu=[])
    try:
        brokered = LLMClient(_config(url, cache_dir, key_ref("RLM_API_KEY")), session=session)
        for client in (brokered, here):
            client.complete_batch([f"warm up {i}" for i in range(CONCURRENCY)], budget=Budget())
        for round_no in range(rounds):
            s0 = echo_server.cpu_seconds(server_pid)
            wall, caller, broker = timed_echo_batch(
                _batch(brokered), n, other_cpu=lambda: echo_server.cpu_seconds(pid)
            )
            s1 = echo_server.cpu_seconds(server_pid)
            here_wall, here_cpu, _ = timed_echo_batch(_batch(here), n)
            s2 = echo_server.cpu_seconds(server_pid)
            for key, value in (
                ("wall", wall),
                ("caller", caller),
                ("broker", broker),
                ("server", (s1 - s0) / n),
                ("here_wall", here_wall),
                ("here", here_cpu),
                ("here_server", (s2 - s1) / n),
            ):
                out[key].append(value)
            round_dir = os.path.join(cache_dir, f"round{round_no}")
            cached = LLMClient(_config(url, round_dir, key_ref("RLM_API_KEY"), "readwrite"), session=session)
            cached.complete_batch([f"warm up {i}" for i in range(CONCURRENCY)], budget=Budget())
            wall, caller, broker = timed_echo_batch(
                _batch(cached), n, other_cpu=lambda: echo_server.cpu_seconds(pid)
            )
            out["cached_wall"].append(wall)
            out["cached_cpu"].append(caller + broker)
    finally:
        here.close()
        session.close()  # closes the link: the broker and its supervisor exit
    return out


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


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def run(quick: bool) -> list[Figure]:
    n = 640 if quick else 1000
    rounds = 1 if quick else 3
    ideal = math.ceil(n / CONCURRENCY) * LATENCY
    proc, url = echo_server.start(LATENCY)
    load_before = _load()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            m = _measure(url, n, rounds, tmp, proc.pid)
        load_after = _load()
        t0 = echo_server.cpu_seconds(proc.pid)
        theirs = _measure_rlms(url, n)
        theirs_server = (echo_server.cpu_seconds(proc.pid) - t0) / n
    finally:
        proc.terminate()
        proc.wait(10)
    med = {k: statistics.median(v) for k, v in m.items()}
    spread = f"{min(m['wall']):.3f}–{max(m['wall']):.3f} s" if rounds > 1 else ""
    setup = (
        f"N={n}, L={LATENCY * 1000:.0f} ms, C={CONCURRENCY}; median of {rounds} alternating round(s); "
        f"load average (1/5/15 min) {load_before} before, {load_after} after"
    )
    cpu = med["caller"] + med["broker"]
    figures = [
        Figure(
            "fan-out wall time through the broker",
            med["wall"],
            "s",
            baseline=ideal,
            baseline_name="ideal ceil(N/C)·L",
            target="≤1.3× ideal",
            met=med["wall"] <= 1.3 * ideal,
            note=f"{setup}; rounds {spread}; in-process client, same rounds: {med['here_wall']:.3f} s",
        ),
        Figure(
            "fan-out wall time, in-process client (no broker)",
            med["here_wall"],
            "s",
            baseline=ideal,
            baseline_name="ideal ceil(N/C)·L",
            note=setup,
        ),
        Figure(
            "client CPU per call through the broker (caller + broker)",
            cpu * 1000,
            "ms",
            baseline=med["here"] * 1000,
            baseline_name="in-process client, same rounds",
            target="≤0.6 ms",
            met=cpu <= 0.0006,
            note=f"{setup}; caller {med['caller'] * 1000:.3f} ms + broker {med['broker'] * 1000:.3f} ms",
        ),
        Figure(
            "client CPU per call through the broker, cache on (readwrite: miss + record)",
            med["cached_cpu"] * 1000,
            "ms",
            baseline=cpu * 1000,
            baseline_name="cache off, same rounds",
            target="≤0.6 ms",
            met=med["cached_cpu"] <= 0.0006,
            note=f"{setup}; wall {med['cached_wall']:.3f} s; a new cache directory each round",
        ),
        Figure(
            "echo server CPU per call (must not be the limit)",
            med["server"] * 1000,
            "ms",
            baseline=cpu * 1000,
            baseline_name="our client through the broker",
            note=f"benchmarks/echo_server.py in its own process; in-process rounds: "
            f"{med['here_server'] * 1000:.3f} ms",
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
                baseline=med["wall"],
                baseline_name="through our broker, same run",
                target="> 1× (we stay ahead)",
                met=theirs[0] > med["wall"],
                note=f"{setup}; rlms LM handler with batch_max_concurrent={CONCURRENCY}; one round",
            ),
            Figure(
                "rlms client CPU per call",
                theirs[1] * 1000,
                "ms",
                baseline=cpu * 1000,
                baseline_name="through our broker, same run",
                note="rlms: LM handler thread + openai client, one process; "
                f"server {theirs_server * 1e3:.3f} ms/call",
            ),
        ]
    return figures
