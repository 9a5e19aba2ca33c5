"""Offline model throughput: our settings (half the cores, passive OpenMP wait) against llama.cpp's defaults
(all cores, active wait), idle and with one core busy, on the xllamacpp runtime.

Needs the `[local]` extra; returns no figures without it. Run: `python -m benchmarks.run --only local_model`.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx

from benchmarks.common import Figure

__all__ = ["run"]

PROMPT = (
    "Here is a passage from the Python reference.\n\n"
    + "The while statement is used for repeated execution as long as an expression is true. " * 40
    + "\n\nSummarise the passage in three sentences."
)


@contextlib.contextmanager
def _server(threads: int, passive: bool) -> Iterator[str]:
    """The offline model's server process (xllamacpp) with `threads` (-1: llama.cpp's default, all cores)
    and OpenMP's wait policy passive (ours) or left at its default (active spinning)."""
    from rlm_kernel.llm import local

    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ready.json")
        cmd = [
            sys.executable, "-m", "rlm_kernel.llm.local_server", "--parent-pid", str(os.getpid()),
            "--model", str(local.find_gguf()), "--alias", local.LOCAL_MODEL_NAME, "--port", "0",
            "--threads", str(threads), "--ctx", "4096", "--ready-file", ready,
        ]  # fmt: skip
        if local.cpu_has_amx():
            cmd.append("--no-extra-bufts")
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        if passive:
            env["OMP_WAIT_POLICY"] = "PASSIVE"
        with open(os.path.join(tmp, "log"), "wb") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        try:
            deadline = time.monotonic() + 300
            while not os.path.exists(ready):
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = open(os.path.join(tmp, "log"), errors="replace").read()[-2000:]
                    raise RuntimeError(f"the model server did not start: {tail}")
                time.sleep(0.2)
            with open(ready) as fh:
                yield json.load(fh)["address"] + "/v1"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@contextlib.contextmanager
def _busy_core(active: bool) -> Iterator[None]:
    """Keep one core busy with a plain Python loop (the kernel or another program working) while measuring."""
    if not active:
        yield
        return
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        burner.kill()
        burner.wait()


def _tokens_per_second(base: str, repetitions: int) -> float:
    """Median of (prompt + generated tokens) / wall seconds for one fixed request."""
    rates = []
    messages = [{"role": "user", "content": PROMPT}]
    body = {"model": "m", "messages": messages, "max_tokens": 48, "temperature": 0}
    httpx.post(f"{base}/chat/completions", json=body, timeout=300)  # warm-up (loads weights into the cache)
    for i in range(repetitions):
        # a different first word each time, so llama.cpp's prompt cache cannot skip the prompt
        varied = {**body, "messages": [{"role": "user", "content": f"Request {i}. {PROMPT}"}]}
        t0 = time.perf_counter()
        usage = httpx.post(f"{base}/chat/completions", json=varied, timeout=300).json()["usage"]
        rates.append(usage["total_tokens"] / (time.perf_counter() - t0))
    rates.sort()
    return rates[len(rates) // 2]


def run(quick: bool) -> list[Figure]:
    from rlm_kernel.llm import local

    if not local.local_model_available():
        print(f"bench_local_model: skipped, the offline model is not installed ({local.INSTALL_HINT})")
        return []
    reps = 3 if quick else 7
    threads = local.local_threads()
    cores = len(os.sched_getaffinity(0))
    figures = []
    for busy in (False, True):
        with _busy_core(busy):
            with _server(threads, passive=True) as base:
                mine = _tokens_per_second(base, reps)
            with _server(-1, passive=False) as base:
                default = _tokens_per_second(base, reps)
        figures.append(
            Figure(
                name=f"offline model throughput, {'one core busy' if busy else 'no extra load'}",
                value=mine,
                unit="tokens/s",
                baseline=default,
                baseline_name="llama.cpp default threads and OpenMP wait",
                target="ratio ≥ 1",
                met=mine >= default,
                note=f"ours: n_threads = n_threads_batch = {threads} on {cores} usable cores, "
                "OMP_WAIT_POLICY=PASSIVE; "
                f"prompt ~{len(PROMPT) // 4} tokens + 48 generated; median of {reps}",
            )
        )
    return figures
