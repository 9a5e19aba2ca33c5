"""Progress on a long corpus load through the real kernel: an updating display (HTML with a text twin) once
the load passes a second, and an interrupt that stops the load cleanly, keeping the files read before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpora.make_files import make_pdf
from tests.kernel_client import KernelHarness, ok, probe

pytestmark = pytest.mark.timeout(600)
COPIES = 1500


@pytest.fixture(scope="module")
def many_pdfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("many")
    make_pdf(root / "seed.pdf", [[f"page {p} line {i} of the ledger" for i in range(30)] for p in range(3)])
    data = (root / "seed.pdf").read_bytes()
    (root / "seed.pdf").unlink()
    (root / "pdfs").mkdir()
    for i in range(COPIES):
        (root / "pdfs" / f"doc{i:04}.pdf").write_bytes(data)
    return root


def test_a_long_load_shows_progress_and_an_interrupt_keeps_what_was_read(many_pdfs: Path) -> None:
    kernel = KernelHarness(cwd=str(many_pdfs))
    try:
        ok(kernel, "import json")
        seen: list[dict] = []

        def on_message(msg: dict) -> None:
            if msg["msg_type"] in ("display_data", "update_display_data"):
                data = msg["content"]["data"]
                if "rlm-load-progress" in data.get("text/html", ""):
                    seen.append(data)
                    if len(seen) == 2:
                        kernel.interrupt()

        ex = kernel.execute("s = load_context('pdfs')\ns", timeout=600, on_message=on_message)
        assert seen, "a load over a second shows its progress"
        first = seen[0]["text/plain"]
        assert "files" in first and "MB" in first and "skipped" in first
        assert ex.ok, str(ex)  # the interrupt ends the load, not the cell: what was read is the context
        assert "the load was interrupted" in ex.result
        loaded = probe(kernel, "len(context_files)")
        assert 0 < loaded < COPIES
        assert probe(kernel, "all(n.startswith('pdfs/doc') for n in context_files)")
        assert kernel.is_alive()
        ex = ok(kernel, "len(load_context('pdfs/doc0001.pdf').files)")  # and the kernel loads on
    finally:
        kernel.shutdown()


def test_a_thousand_mixed_files_with_twenty_hostile_ones(tmp_path: Path) -> None:
    from tests.corpora.make_files import make_corpus, make_hostile

    seeds, bad = tmp_path / "seeds", tmp_path / "bad"
    make_corpus(seeds)
    hostile = make_hostile(bad, bomb_mb=24)
    corpus = tmp_path / "big"
    corpus.mkdir()
    good = [p for p in sorted(seeds.iterdir()) if p.is_file()]
    for i in range(980):
        seed = good[i % len(good)]
        (corpus / f"{i:04}-{seed.name}").write_bytes(seed.read_bytes())
    bad_files = [bad / name for name in hostile]
    for i in range(20):
        seed = bad_files[i % len(bad_files)]
        (corpus / f"x{i:02}-{seed.name}").write_bytes(seed.read_bytes())
    kernel = KernelHarness(cwd=str(tmp_path), env={"RLM_CORPUS_MAX_EXPANDED_MB": "8"})
    try:
        ok(kernel, "import json")
        ok(kernel, "s = load_context('big')", timeout=600)
        skipped = probe(kernel, "list(s.skipped)")
        assert len(skipped) == 20 and all(line.startswith("big/x") for line in skipped), skipped
        files = probe(kernel, "len(context_files)")
        archives = sum(1 for i in range(980) if good[i % len(good)].name in ("bundle.zip",))
        assert files == 980 + archives  # a zip of two members gives two files
        assert kernel.is_alive()
    finally:
        kernel.shutdown()
