"""Kernel start-up, measured fairly: interleaved pairs, the median of the per-pair ratios, and its spread.

Two kernels (A, B) are started alternately in the order A B, B A, A B, …, so neither side always goes first
and a burst of load on the machine hits both sides of a pair. Each start is timed twice, from the
`KernelManager` launch: to *ready* (the kernel answered `kernel_info`, what `KernelHarness.startup_seconds`
measures, and what a frontend waits for) and to the *first result* (`1+1`'s `execute_result` arrived), so
work moved past "ready" still counts. The figure is the median of the pair ratios A/B; the spread is their
lowest and highest, the load average the machine had during the run.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.common import Figure
from tests.kernel_client import KernelHarness

__all__ = ["Pairs", "fresh_bytecode", "interleaved", "start_once", "startup_figures"]


@dataclass
class Pairs:
    """Per-pair timings (seconds) of two kernels started alternately, and the load averages seen."""

    ready: list[tuple[float, float]] = field(default_factory=list)
    first: list[tuple[float, float]] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)

    @staticmethod
    def ratios(pairs: list[tuple[float, float]]) -> list[float]:
        return [a / b for a, b in pairs]

    def summary(self, pairs: list[tuple[float, float]]) -> tuple[float, float, float, float, float]:
        """(median of A, median of B, median of the pair ratios, lowest ratio, highest ratio)."""
        ratios = self.ratios(pairs)
        return (
            statistics.median(a for a, _ in pairs),
            statistics.median(b for _, b in pairs),
            statistics.median(ratios),
            min(ratios),
            max(ratios),
        )


def start_once(kernel_name: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(launch → ready, launch → first result) of one kernel start, in seconds."""
    t0 = time.perf_counter()
    harness = KernelHarness(kernel_name, env=env or {})
    try:
        ready = harness.startup_seconds
        ex = harness.execute("1+1", timeout=60)
        first = time.perf_counter() - t0
        if not ex.ok or ex.result != "2":
            raise RuntimeError(f"first cell failed in {kernel_name}:\n{ex}")
        return ready, first
    finally:
        harness.shutdown()


def interleaved(
    start_a: Callable[[], tuple[float, float]], start_b: Callable[[], tuple[float, float]], pairs: int
) -> Pairs:
    """`pairs` starts of each kernel, A B / B A alternately (one warm-up pair first, not counted)."""
    start_b()
    start_a()
    out = Pairs()
    for i in range(pairs):
        if i % 2:
            b = start_b()
            a = start_a()
        else:
            a = start_a()
            b = start_b()
        out.ready.append((a[0], b[0]))
        out.first.append((a[1], b[1]))
        out.loads.append(os.getloadavg()[0])
    return out


def fresh_bytecode() -> None:
    """Compile the package's bytecode as `rlm-kernel install` does: stock ipykernel's was compiled by pip,
    and a kernel compiling ours from source at each start (editable install, PYTHONDONTWRITEBYTECODE) would
    measure the compiler, not the kernel."""
    from rlm_kernel.install import compile_package

    compile_package()


def startup_figures(name: str, pairs: Pairs, baseline_name: str, target: float, what: str) -> list[Figure]:
    """The ready and first-result figures: values are medians, the ratio the median of the pair ratios."""
    loads = f"load average {min(pairs.loads):.1f}–{max(pairs.loads):.1f}"
    figures = []
    kinds = (("launch to ready", pairs.ready, True), ("launch to first result", pairs.first, False))
    for label, data, targeted in kinds:
        a, b, ratio, low, high = pairs.summary(data)
        figures.append(
            Figure(
                name=f"{name} ({label})",
                value=a,
                unit="s",
                baseline=b,
                baseline_name=baseline_name,
                target=f"<= {target}x" if targeted else None,
                met=ratio <= target if targeted else None,
                note=(
                    f"{what}; median of {len(data)} interleaved pair ratios {ratio:.3f}x "
                    f"(spread {low:.2f}–{high:.2f}x); {loads}"
                ),
                paired_ratio=ratio,
            )
        )
    return figures
