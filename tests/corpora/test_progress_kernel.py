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
