"""A library's first load in a cell lifts the memory cap and pauses the timers (`limits.uncounted`):
no cell code may run meanwhile. A cell's finalizers left in reference cycles must not be run by a garbage
collection the import triggers — they would allocate with the cap lifted, and it would join the baseline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kernel_client import KernelHarness

CAP_MB = 100
ATTACK = """
store = []
def g():
    try:
        yield
    finally:
        while len(store) < 8:
            store.append(bytearray(60 * 10**6))
class Box:
    pass
hold = []
for n in range(50):  # cycles spread over the collector's generations, so one is collected mid-import
    it = g(); next(it)
    b = Box(); b.me = b; b.it = it
    hold.append(b)
    junk = [[i] for i in range(300 + 37 * n)]
hold = b = it = junk = None
"""


@pytest.fixture
def kernel() -> Iterator[KernelHarness]:  # a fresh kernel each: each test needs a first load
    with KernelHarness("rlm", env={"RLM_MEMORY_MB": str(CAP_MB)}) as k:
        yield k


@pytest.mark.parametrize(
    "first_load", ["find_relevant('alpha beta gamma ' * 50, 'gamma')", "import numpy as np"]
)
def test_cell_finalizers_do_not_run_while_the_cap_is_lifted(kernel: KernelHarness, first_load: str) -> None:
    kernel.execute("pass")
    assert kernel.execute(ATTACK).ok
    kernel.execute(first_load, timeout=120)  # the first load of numpy/bm25s: kernel work, cap lifted
    held = kernel.execute("sum(len(x) for x in store)", timeout=60)
    assert held.ok, held
    assert int(held.result) <= CAP_MB * 2**20, held.result  # finalizers ran under the cell's cap
    big = kernel.execute("big = 'a' * (300 * 2**20)", timeout=60)
    assert big.error_name in ("MemoryError", "LimitExceeded"), big  # and the cap still holds
