"""`load_corpus` on a Dask cluster reads the same formats as in-process (issue 28): every format made by its
own library, hostile files skipped with their reasons, and the documents' text searched by the cluster's
workers (they read the spooled text from the kernel's temporary folder), from a real, confined kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpora.make_files import make_corpus, make_hostile
from tests.kernel_client import KernelHarness, ok, probe

pytestmark = pytest.mark.timeout(600)


def test_load_corpus_on_a_dask_cluster_reads_every_format(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed", reason="needs the [dask] extra")
    want = make_corpus(tmp_path / "docs")
    bad = make_hostile(tmp_path / "docs" / "hostile", bomb_mb=24)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        env = {"RLM_DASK_SCHEDULER": cluster.scheduler_address, "RLM_CORPUS_MAX_EXPANDED_MB": "8"}
        with KernelHarness(cwd=str(tmp_path), env=env, remove_env=("RLM_CONFINEMENT",)) as kernel:
            ok(kernel, "import json")
            ok(kernel, "corpus = load_corpus('docs', partition_mb=0.01)", timeout=300)
            files = probe(kernel, "list(corpus.files)")
            for name in want:
                assert f"docs/{name}" in files, (name, files)
            skipped = probe(kernel, "list(corpus.skipped)")
            for name in bad:
                assert any(f"hostile/{name} (" in s for s in skipped), (name, skipped)
            assert probe(kernel, "corpus.partitions") >= len(want)  # one or more per file, for the workers
            for query, phrase in (
                ("cobalt mine", "The cobalt mine closed in 1921."),  # PDF
                ("saffron barge", "twelve crates of saffron"),  # DOCX
                ("copper kettles", "zipped text about copper kettles"),  # a zip member
                ("Perth 733", "Perth | 733"),  # Parquet (the CSV has no Perth)
                ("bridge toll pennies", "The bridge toll rises to three pennies."),  # eml
            ):
                hits = probe(kernel, f"find_relevant(corpus, {query!r}, top_k=1)", timeout=300)
                assert hits and phrase in hits[0][0], (query, hits)
            assert kernel.is_alive()
        prefixes = list(cluster.scheduler.task_prefixes)  # the scheduler runs in this process
        assert any("partition" in p for p in prefixes), prefixes  # the workers did the searching
