"""Shared shape of benchmark results: every figure is a value, a baseline measured in the same run, a ratio.

Benchmark modules are `benchmarks/bench_*.py`, each exposing `run(quick: bool) -> list[Figure]`.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Figure", "median_time", "repeat_median", "start_test_server"]

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Figure:
    """One reported number. `ratio` = value / baseline (None when there is no baseline)."""

    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str | None = None
    target: str | None = None
    met: bool | None = None
    note: str = ""
    paired_ratio: float | None = None
    """When set, the ratio: the median of per-pair ratios of interleaved runs (robust to load bursts)."""

    @property
    def ratio(self) -> float | None:
        if self.paired_ratio is not None:
            return self.paired_ratio
        if self.baseline in (None, 0):
            return None
        return self.value / self.baseline

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ratio"] = self.ratio
        return d


def repeat_median(fn: Callable[[], float], repetitions: int) -> float:
    """Call `fn` (which returns a measurement) `repetitions` times and return the median."""
    return statistics.median(fn() for _ in range(repetitions))


def median_time(fn: Callable[[], object], repetitions: int = 5) -> float:
    """Median wall time in seconds of `fn()` over `repetitions` runs."""

    def once() -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    return repeat_median(once, repetitions)


def start_test_server(latency: float, mode: str = "echo") -> tuple[subprocess.Popen[str], str]:
    """Start `tests.llm_server` in its own process (so its CPU is not the client's); return it and its URL."""
    from benchmarks.echo_server import start_server_process

    args = ["tests.llm_server", "--port", "0", "--mode", mode, "--latency", str(latency)]
    return start_server_process(args, "test server")


def timed_echo_batch(
    run_batch: Callable[[list[str]], list[str]], n: int, other_cpu: Callable[[], float] | None = None
) -> tuple[float, float, float]:
    """Time one batch of `n` prompts against the echo test server: (wall s, this process's CPU s per call,
    `other_cpu`'s CPU s per call — e.g. a broker process's — or 0). The answers must be the prompts."""
    prompts = [f"prompt number {i} with a few words" for i in range(n)]
    other0 = other_cpu() if other_cpu else 0.0
    cpu0, t0 = time.process_time(), time.perf_counter()
    texts = run_batch(prompts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    other = (other_cpu() - other0) if other_cpu else 0.0
    if texts != prompts:
        raise AssertionError(f"results differ from the prompts or are out of order: {texts[:2]}")
    return wall, cpu / n, other / n
