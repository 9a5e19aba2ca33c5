"""Cost of the OS layer: the rlm kernel with Landlock + seccomp on vs off (RLM_CONFINEMENT=off), same run.

Start-up (launch to ready, and to the first result) as interleaved pairs, the figure the median of the pair
ratios (`benchmarks/startup.py`); the sandbox's Python-loop cell and the round trips, measured alternately.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from benchmarks.bench_sandbox import CELLS, _timed
from benchmarks.common import Figure
from benchmarks.startup import fresh_bytecode, interleaved, start_once, startup_figures
from tests.kernel_client import KernelHarness

__all__ = ["run"]

OFF = {"RLM_CONFINEMENT": "off"}
TARGET = 1.05


def _alternate(fn_a: Callable[[], float], fn_b: Callable[[], float], reps: int) -> list[tuple[float, float]]:
    """`reps` pairs (a, b), the order swapped every repetition (neither side always goes first)."""
    pairs: list[tuple[float, float]] = []
    for i in range(reps):
        if i % 2:
            b = fn_b()
            pairs.append((fn_a(), b))
        else:
            a = fn_a()
            pairs.append((a, fn_b()))
    return pairs


def _figure(name: str, pairs: list[tuple[float, float]], note: str) -> Figure:
    """Medians as value and baseline; the ratio is the median of the pair ratios (with its spread)."""
    ratios = [a / b for a, b in pairs]
    ratio = statistics.median(ratios)
    return Figure(
        name=name,
        value=statistics.median(a for a, _ in pairs),
        unit="s",
        baseline=statistics.median(b for _, b in pairs),
        baseline_name="confinement off",
        target=f"<= {TARGET}x",
        met=ratio <= TARGET,
        note=f"{note}; median of {len(pairs)} pair ratios (spread {min(ratios):.2f}–{max(ratios):.2f}x)",
        paired_ratio=ratio,
    )


def run(quick: bool = True) -> list[Figure]:
    """Start-up and cells alternately with confinement on and off; one ratio figure each."""
    starts = 9 if quick else 21
    reps = 5 if quick else 15
    trips = 40 if quick else 200
    n = 1_000_000 if quick else 5_000_000
    fresh_bytecode()
    pairs = interleaved(lambda: start_once("rlm"), lambda: start_once("rlm", OFF), starts)
    what = "Landlock + seccomp vs RLM_CONFINEMENT=off"
    figures = startup_figures("kernel start-up, confined", pairs, "confinement off", TARGET, what)
    confined = KernelHarness("rlm")
    plain = KernelHarness("rlm", env=OFF)
    try:
        assert "NOT active" not in confined.execute("%rlm security").all_text, "confinement is not active"
        loop = CELLS["python loop"][0].format(n=n)
        _timed(confined, loop)
        _timed(plain, loop)
        pairs = _alternate(lambda: _timed(confined, loop), lambda: _timed(plain, loop), reps)
        figures.append(_figure("python loop cell, confined", pairs, CELLS["python loop"][1]))
        pairs = _alternate(lambda: _timed(confined, ""), lambda: _timed(plain, ""), trips)
        figures.append(_figure("empty cell round trip, confined", pairs, "execute_request to idle"))
        pairs = _alternate(lambda: _timed(confined, "x = 1"), lambda: _timed(plain, "x = 1"), trips)
        figures.append(_figure("one-statement round trip, confined", pairs, "`x = 1`"))
    finally:
        confined.shutdown()
        plain.shutdown()
    return figures
