"""`load_corpus` from cells of a real `rlm` kernel: in-process, and on a 2-worker Dask LocalCluster with a
corpus bigger than the kernel's memory limit (slow)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.kernel_client import KernelHarness

NEEDLE = "the_needle_identifier = compute_needle(haystack)"


def write_corpus(root: Path, total_bytes: int, files: int) -> None:
    """`files` text files of about total_bytes/files each, varied lines; NEEDLE once, in the last file."""
    lines = [
        f"def handler_{i}(request, retry_budget={i % 7}):  # socket frame token cache {i * 37 % 101}\n"
        for i in range(2000)
    ]
    block = "".join(lines).encode()
    per_file = total_bytes // files
    for f in range(files):
        with open(root / f"shard{f:03d}.py", "wb") as out:
            written = 0
            while written < per_file:
                out.write(block)
                written += len(block)
            if f == files - 1:
                out.write(f"{NEEDLE}\n".encode())


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc status")


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    return root


def test_corpus_helpers_from_a_cell(corpus_dir: Path) -> None:
    write_corpus(corpus_dir, 3_000_000, files=3)
    with KernelHarness(env={"RLM_CONTEXT_ROOTS": str(corpus_dir)}, remove_env=("RLM_DASK_SCHEDULER",)) as k:
        r = k.execute(
            f"c = load_corpus({str(corpus_dir / '*.py')!r}, partition_mb=0.5)\nc.partitions, c.files"
        )
        assert r.ok, r
        assert r.result.startswith("(6,") and "shard000.py'" in r.result, r
        r = k.execute("hits = find_relevant(c, 'the_needle_identifier', top_k=2)\nhits[0][0].strip()[-60:]")
        assert r.ok, r
        assert NEEDLE in r.result
        r = k.execute(
            "type(c)('/etc', ('passwd',), 1, 1)\nfind_relevant(type(c)('/etc', ('p',), 1, 1), 'root')"
        )
        assert r.status == "error" and "not made by load_corpus" in (r.error_value or ""), r
        r = k.execute("load_corpus('/etc')")
        assert r.status == "error" and "outside the allowed roots" in (r.error_value or ""), r


def test_a_small_corpus_on_a_dask_cluster_from_the_confined_kernel(corpus_dir: Path) -> None:
    """The OS layer stays on (RLM_CONFINEMENT unset): the kernel still reaches the scheduler."""
    distributed = pytest.importorskip("distributed", reason="needs the [dask] extra")
    write_corpus(corpus_dir, 2_000_000, files=2)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        env = {"RLM_CONTEXT_ROOTS": str(corpus_dir), "RLM_DASK_SCHEDULER": cluster.scheduler_address}
        with KernelHarness(env=env, remove_env=("RLM_CONFINEMENT",)) as k:
            r = k.execute(
                f"c = load_corpus({str(corpus_dir)!r}, partition_mb=0.25)\n"
                "find_relevant(c, 'the_needle_identifier', top_k=1)[0][0].strip()[-60:]",
                timeout=300,
            )
            assert r.ok, r
            assert NEEDLE in r.result


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_corpus_bigger_than_the_kernel_memory_limit_on_a_dask_cluster(corpus_dir: Path) -> None:
    distributed = pytest.importorskip("distributed", reason="needs the [dask] extra")
    limit_mb = int(os.environ.get("RLM_TEST_CORPUS_LIMIT_MB", "1024"))  # the kernel's address space: ~0.9 GB
    factor = float(os.environ.get("RLM_TEST_CORPUS_FACTOR", "1.1"))  # the target: 4
    write_corpus(corpus_dir, int(limit_mb * factor * 2**20), files=40)
    size_mb = sum(p.stat().st_size for p in corpus_dir.iterdir()) / 2**20
    assert size_mb > limit_mb
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, memory_limit="2GiB", dashboard_address=None
    ) as cluster:
        env = {
            "RLM_CONTEXT_ROOTS": str(corpus_dir),
            "RLM_DASK_SCHEDULER": cluster.scheduler_address,
            "RLM_MEMORY_MB": str(limit_mb),
            "RLM_CPU_SECONDS": "3000",
        }
        with KernelHarness(env=env) as k:
            r = k.execute(
                f"c = load_corpus({str(corpus_dir)!r})\n"
                "hits = find_relevant(c, 'the_needle_identifier compute_needle', top_k=3)\n"
                "c.partitions, len(hits), hits[0][0].strip()[-60:]",
                timeout=3000,
            )
            assert r.ok, r
            assert NEEDLE in r.result
            peak = peak_rss_mb(k.km.provisioner.process.pid)
    figures = f"kernel peak RSS {peak:.0f} MB, limit {limit_mb} MB, corpus {size_mb:.0f} MB"
    print(figures)  # shown with -rP
    assert peak < limit_mb, figures
