"""What trust-follows-code costs (issue 26, class 2): per model block and per privileged call, in-process.

    python -m benchmarks.run --only trust

- a `--shared` model block with its bindings record (a snapshot of the notebook namespace before the block,
  its write guards watched, a diff after, the objects it left recorded as model-made) against the same
  block without it, in a 500-name namespace — interleaved pairs, the median
  of the pair ratios. The block itself is what `rootloop.blocks.execute` runs (`run_source(model=True)`);
  a real turn adds a model call, which this leaves out, so the ratio overstates the cost per turn;
- the stack walk of `refuse_in_model_code` at a depth of 40 frames (a privileged call: rare).
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks.common import Figure
from rlm_kernel.rootloop.bindings import Bindings
from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source
from rlm_kernel.sandbox.origin import model_frame_on_stack
from rlm_kernel.sandbox.watch import watching

_BLOCK = "rows = [i * 2 for i in range(200)]\ntotal = sum(rows)\nlabel = f'total {total}'"


def _block_ratio(pairs: int) -> tuple[float, float, float]:
    session = SandboxSession()
    ns = new_namespace(session)
    ns.update({f"v{i}": i for i in range(500)})
    bound = Bindings({})

    def plain() -> float:
        t0 = time.perf_counter()
        run_source(_BLOCK, ns, session, filename="<bench>", model=True)
        return time.perf_counter() - t0

    def recorded() -> float:
        t0 = time.perf_counter()
        before = bound.before(ns)
        with watching(ns) as writes:  # the block's writes to the person's objects (sandbox/watch.py)
            run_source(_BLOCK, ns, session, filename="<bench>", model=True)
        bound.after(ns, before, writes)
        return time.perf_counter() - t0

    plain(), recorded()  # warm-up
    ratios, a, b = [], [], []
    for i in range(pairs):
        first, second = (plain, recorded) if i % 2 == 0 else (recorded, plain)
        x, y = first(), second()
        p, r = (x, y) if first is plain else (y, x)
        a.append(p)
        b.append(r)
        ratios.append(r / p)
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


def _walk_seconds(depth: int, repetitions: int) -> float:
    def nest(n: int) -> float:
        if n:
            return nest(n - 1)
        t0 = time.perf_counter()
        for _ in range(repetitions):
            model_frame_on_stack(sys._getframe())
        return (time.perf_counter() - t0) / repetitions

    return nest(depth)


def run(quick: bool = True) -> list[Figure]:
    plain, recorded, ratio = _block_ratio(41 if quick else 201)
    walk = _walk_seconds(40, 2_000 if quick else 20_000)
    return [
        Figure(
            "shared model block with its bindings record (500-name namespace)",
            recorded * 1000,
            "ms",
            baseline=plain * 1000,
            baseline_name="the same block without the record",
            target="≤ 1.25× of a bare block that makes no model call (a real turn adds one)",
            met=ratio <= 1.25,
            note=f"+{(recorded - plain) * 1e6:.0f} µs per block",
            paired_ratio=ratio,
        ),
        Figure(
            "stack walk of a privileged call, 40 frames deep",
            walk * 1e6,
            "µs",
            note="runs only when load_context(allow_secrets=True), rlm_run or a magic is called",
        ),
    ]
