"""Sandbox overhead: the same cells in the rlm kernel and in stock ipykernel, both through jupyter_client.

Figures are medians of client-side round-trip times, the two kernels measured alternately in the same run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from benchmarks.common import Figure
from tests.kernel_client import KernelHarness

__all__ = ["CELLS", "run"]

# Built outside the timing: ~10 MB of word-like text with newlines, identical in both kernels.
SETUP_TEXT = (
    "from collections import Counter\n"
    "import re\n"
    "syllables = ['ka', 'lo', 're', 'mi', 'tan', 'sor', 'el', 'vu', 'qui', 'on']\n"
    "vocab = [a + b + c for a in syllables for b in syllables for c in syllables]\n"
    "words = [vocab[(i * 7919) % len(vocab)] for i in range(1_600_000)]\n"
    "text = ' '.join(words)\n"
    "text = '\\n'.join(text[i:i + 80] for i in range(0, len(text), 80))[:10_000_000]\n"
    "len(text)"
)

CELLS: dict[str, tuple[str, str, float]] = {
    # name: (code, what it measures, target ratio)
    "python loop": (
        "total = 0\nfor i in range({n}):\n    total += i * i % 7\ntotal",
        "pure-Python loop with arithmetic and an augmented assignment",
        1.3,
    ),
    "string processing 10 MB": (
        "parts = text.split()\n"
        "counts = Counter(parts)\n"
        "top = counts.most_common(5)\n"
        "five = len(re.findall(r'\\b\\w{{5}}\\b', text))\n"
        "chunks = [text[i:i + 4096] for i in range(0, len(text), 4096)]\n"
        "lines = text.split('\\n')\n"
        "longest = max(len(line) for line in lines)\n"
        "(len(parts), five, len(chunks), longest)",
        "split, Counter, re.findall, slicing and a generator over a 10 MB string",
        1.5,
    ),
    "comprehensions": (
        "rows = [{{'id': i, 'sq': i * i, 'tag': str(i % 10)}} for i in range({m})]\n"
        "sel = [r['sq'] for r in rows if r['tag'] == '3']\n"
        "by_id = {{r['id']: r['sq'] for r in rows[:50000]}}\n"
        "pairs = sorted(((r['tag'], r['id']) for r in rows[:50000]), key=lambda p: (p[0], -p[1]))\n"
        "(len(sel), len(by_id), pairs[0])",
        "list/dict comprehensions, subscripts, a sort with a key function",
        1.5,
    ),
}


def _timed(harness: KernelHarness, code: str, timeout: float = 300) -> float:
    t0 = time.perf_counter()
    ex = harness.execute(code, timeout=timeout)
    elapsed = time.perf_counter() - t0
    if not ex.ok:
        raise RuntimeError(f"benchmark cell failed in {harness.kernel_name}:\n{ex}")
    return elapsed


def _alternate(fn_a: Callable[[], float], fn_b: Callable[[], float], reps: int) -> tuple[float, float]:
    a: list[float] = []
    b: list[float] = []
    for _ in range(reps):
        a.append(fn_a())
        b.append(fn_b())
    return statistics.median(a), statistics.median(b)


def _ratio_figure(name: str, rlm: float, base: float, target: float | None, note: str) -> Figure:
    return Figure(
        name=name,
        value=rlm,
        unit="s",
        baseline=base,
        baseline_name="ipykernel",
        target=None if target is None else f"<= {target}x",
        met=None if target is None else rlm / base <= target,
        note=note,
    )


def run(quick: bool = True) -> list[Figure]:
    """Run every cell alternately in both kernels; return one ratio figure per cell."""
    reps = 5 if quick else 15
    empty_reps = 40 if quick else 200
    n, m = (1_000_000, 200_000) if quick else (5_000_000, 1_000_000)
    figures: list[Figure] = []

    # kernel start-up: benchmarks/bench_startup.py

    rlm = KernelHarness("rlm")
    base = KernelHarness("python3")
    try:
        for harness in (rlm, base):
            _timed(harness, SETUP_TEXT)
        for name, (template, note, target) in CELLS.items():
            code = template.format(n=n, m=m)
            _timed(rlm, code)  # warm-up: first-call costs (imports, caches) are not the steady state
            _timed(base, code)
            r, b = _alternate(lambda c=code: _timed(rlm, c), lambda c=code: _timed(base, c), reps)
            figures.append(_ratio_figure(f"{name} cell", r, b, target, note))
        r, b = _alternate(lambda: _timed(rlm, ""), lambda: _timed(base, ""), empty_reps)
        figures.append(_ratio_figure("empty cell round trip", r, b, 1.3, "execute_request to idle, no code"))
        r, b = _alternate(lambda: _timed(rlm, "x = 1"), lambda: _timed(base, "x = 1"), empty_reps)
        figures.append(_ratio_figure("one-statement round trip", r, b, 1.3, "`x = 1`: transform + limits"))
    finally:
        rlm.shutdown()
        base.shutdown()
    return figures
