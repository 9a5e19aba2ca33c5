"""`print` in a cell costs the same at the 30,000th call as at the first (output accounting is O(1))."""

from __future__ import annotations

import time

from rlm_kernel.sandbox import Limits, SandboxSession, new_namespace
from rlm_kernel.sandbox.runner import run_source


def _cpu_for(prints: int) -> float:
    """Best of three: CPU seconds of a cell that prints `prints` lines of 100 characters."""
    best = float("inf")
    for _ in range(3):
        session = SandboxSession(Limits(cpu_seconds=120, wall_seconds=600, memory_mb=0), seed=1)
        namespace = new_namespace(session)
        start = time.process_time()
        outcome = run_source(f"for i in range({prints}):\n    print('x' * 100)", namespace, session)
        best = min(best, time.process_time() - start)
        assert outcome.error is None, outcome.error
    return best


def test_print_cost_is_linear_in_the_number_of_prints() -> None:
    small, large = _cpu_for(3_000), _cpu_for(30_000)
    # linear: about 10x; the old accounting (summing all earlier output on every print) was about 100x
    assert large / max(small, 1e-4) <= 15, (small, large)
