"""Offline model throughput: our thread settings against llama.cpp's defaults, idle and with one core busy.

Needs the `[local]` extra; returns no figures without it. Run: `python -m benchmarks.run --only local_model`.
"""

from __future__ import annotations

import contextlib
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
def _server(thread_args: list[str]) -> Iterator[str]:
    from rlm_kernel.llm import local

    port = local._free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(local.find_gguf()),
        "--model_alias", local.LOCAL_MODEL_NAME, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--verbose", "False", *thread_args,
    ]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            base = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    log.seek(0)
                    tail = log.read()[-2000:].decode(errors="replace")
                    raise RuntimeError(f"llama_cpp.server exited: {tail}")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{base}/models", timeout=1).status_code == 200:
                        break
                time.sleep(0.2)
            yield base
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
    threads = str(local.local_threads())
    ours = ["--n_threads", threads, "--n_threads_batch", threads]
    cores = len(os.sched_getaffinity(0))
    figures = []
    for busy in (False, True):
        with _busy_core(busy):
            with _server(ours) as base:
                mine = _tokens_per_second(base, reps)
            with _server([]) as base:
                default = _tokens_per_second(base, reps)
        figures.append(
            Figure(
                name=f"offline model throughput, {'one core busy' if busy else 'no extra load'}",
                value=mine,
                unit="tokens/s",
                baseline=default,
                baseline_name="llama.cpp default threads",
                target="ratio ≥ 1",
                met=mine >= default,
                note=f"ours: n_threads = n_threads_batch = {threads} on {cores} usable cores; "
                f"prompt ~{len(PROMPT) // 4} tokens + 48 generated; median of {reps}",
            )
        )
    return figures
