"""Cost of the OS layer: the rlm kernel with Landlock + seccomp on vs off (RLM_CONFINEMENT=off), same run.

Start-up (launch to ready), the sandbox's Python-loop cell and the round trips, measured alternately.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from benchmarks.bench_sandbox import CELLS, _timed
from benchmarks.common import Figure
from tests.kernel_client import KernelHarness

__all__ = ["run"]

OFF = {"RLM_CONFINEMENT": "off"}
TARGET = 1.05


def _alternate(fn_a: Callable[[], float], fn_b: Callable[[], float], reps: int) -> tuple[float, float]:
    """Medians of `reps` runs each, the order swapped every repetition (neither side always goes first)."""
    a: list[float] = []
    b: list[float] = []
    for i in range(reps):
        if i % 2:
            b.append(fn_b())
            a.append(fn_a())
        else:
            a.append(fn_a())
            b.append(fn_b())
    return statistics.median(a), statistics.median(b)


def _startup(env: dict[str, str]) -> float:
    harness = KernelHarness("rlm", env=env)
    try:
        harness.execute("1", timeout=60)
        return harness.startup_seconds
    finally:
        harness.shutdown()


def _figure(name: str, on: float, off: float, note: str) -> Figure:
    return Figure(
        name=name,
        value=on,
        unit="s",
        baseline=off,
        baseline_name="confinement off",
        target=f"<= {TARGET}x",
        met=on / off <= TARGET,
        note=note,
    )


def run(quick: bool = True) -> list[Figure]:
    """Start-up and cells alternately with confinement on and off; one ratio figure each."""
    starts = 5 if quick else 11
    reps = 5 if quick else 15
    trips = 40 if quick else 200
    n = 1_000_000 if quick else 5_000_000
    on, off = _alternate(lambda: _startup({}), lambda: _startup(OFF), starts)
    figures = [_figure("kernel start-up, confined", on, off, "launch to ready")]
    confined = KernelHarness("rlm")
    plain = KernelHarness("rlm", env=OFF)
    try:
        assert "NOT active" not in confined.execute("%rlm security").all_text, "confinement is not active"
        loop = CELLS["python loop"][0].format(n=n)
        _timed(confined, loop)
        _timed(plain, loop)
        on, off = _alternate(lambda: _timed(confined, loop), lambda: _timed(plain, loop), reps)
        figures.append(_figure("python loop cell, confined", on, off, CELLS["python loop"][1]))
        on, off = _alternate(lambda: _timed(confined, ""), lambda: _timed(plain, ""), trips)
        figures.append(_figure("empty cell round trip, confined", on, off, "execute_request to idle"))
        on, off = _alternate(lambda: _timed(confined, "x = 1"), lambda: _timed(plain, "x = 1"), trips)
        figures.append(_figure("one-statement round trip, confined", on, off, "`x = 1`"))
    finally:
        confined.shutdown()
        plain.shutdown()
    return figures
