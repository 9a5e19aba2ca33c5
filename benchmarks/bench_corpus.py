"""find_relevant on a `load_corpus` corpus: index time on a 2-worker Dask LocalCluster vs in-process.

Each query builds every partition's index (nothing is cached across partitions), so the time of one query is
the index time of the corpus. Target (issue 20): cluster time ≤ 0.7× in-process time.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import Figure

QUERY = "the_needle_identifier compute_needle"


def _write(root: Path, total_mb: int, files: int) -> None:
    lines = [
        f"def handler_{i}(request, retry_budget={i % 7}):  # socket frame token cache {i * 37 % 101}\n"
        for i in range(5000)
    ]
    block = "".join(lines).encode()
    per_file = total_mb * 2**20 // files
    for f in range(files):
        with open(root / f"shard{f:03d}.py", "wb") as out:
            for _ in range(max(1, per_file // len(block))):
                out.write(block)
            if f == files - 1:
                out.write(b"the_needle_identifier = compute_needle(haystack)\n")


def _timed_query(corpus: object) -> float:
    from rlm_kernel.analysis import find_relevant

    t0 = time.perf_counter()
    hits = find_relevant(corpus, QUERY, top_k=3)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - t0
    assert hits and "the_needle_identifier" in hits[0][0], hits[:1]
    return elapsed


def run(quick: bool) -> list[Figure]:
    from distributed import LocalCluster

    from rlm_kernel.analysis import executor
    from rlm_kernel.repl import context as ctxmod
    from rlm_kernel.repl.corpus import load_corpus

    total_mb = 96 if quick else 512
    saved = os.environ.pop(executor.SCHEDULER_ENV, None)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, total_mb, files=12)
        ctxmod.set_allowed_roots([root])
        try:
            corpus = load_corpus(str(root), partition_mb=8)
            local_runs: list[float] = []
            dask_runs: list[float] = []
            with LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster:
                try:
                    os.environ[executor.SCHEDULER_ENV] = cluster.scheduler_address
                    _timed_query(corpus)  # warm: workers import rlm_kernel
                    for _ in range(2 if quick else 3):  # interleaved, so other load hits both alike
                        os.environ.pop(executor.SCHEDULER_ENV, None)
                        local_runs.append(_timed_query(corpus))
                        os.environ[executor.SCHEDULER_ENV] = cluster.scheduler_address
                        dask_runs.append(_timed_query(corpus))
                finally:
                    executor.reset()
                    os.environ.pop(executor.SCHEDULER_ENV, None)
            local, dask = statistics.median(local_runs), statistics.median(dask_runs)
        finally:
            ctxmod.set_allowed_roots(None)
            if saved is not None:
                os.environ[executor.SCHEDULER_ENV] = saved
    return [
        Figure(
            f"find_relevant index time, {total_mb} MiB corpus, 2-worker LocalCluster",
            dask,
            "s",
            baseline=local,
            baseline_name="in-process",
            target="≤ 0.7× in-process",
            met=dask <= 0.7 * local,
            note=f"median of {len(dask_runs)} interleaved runs; {corpus.partitions} partitions of 8 MiB; "
            f"{os.cpu_count()} CPUs",
        )
    ]


if __name__ == "__main__":
    for figure in run(quick=True):
        print(figure)
