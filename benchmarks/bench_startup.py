"""Kernel start-up with the broker against stock ipykernel (issue 14: ≤ 1.3×): launch to ready and launch to
the first cell's result, as interleaved pairs (`benchmarks/startup.py`)."""

from __future__ import annotations

from benchmarks.common import Figure
from benchmarks.startup import fresh_bytecode, interleaved, start_once, startup_figures

__all__ = ["run"]

TARGET = 1.3


def run(quick: bool = True) -> list[Figure]:
    """`rlm` and `python3` (stock ipykernel) started alternately; one figure to ready, one to first result."""
    pairs = 7 if quick else 15
    fresh_bytecode()  # as `rlm-kernel install` does: stock ipykernel's bytecode was compiled by pip
    measured = interleaved(lambda: start_once("rlm"), lambda: start_once("python3"), pairs)
    what = "with the broker (launcher re-exec, supervisor fork; the broker forks while the kernel starts)"
    return startup_figures("kernel start-up", measured, "ipykernel", TARGET, what)
