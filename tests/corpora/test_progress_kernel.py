"""Progress on a long corpus load through the real kernel: an updating display (HTML with a text twin) once
the load passes a second where there is no widget frontend, the load widget (its comm messages) where there
is one, and an interrupt that stops the load cleanly: the files read before it are the context, or, when
none was read yet, the earlier context is kept and the error says so."""

from __future__ import annotations

import threading
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


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_the_load_widget_and_an_interrupt_in_widgets_mode(many_pdfs: Path) -> None:
    kernel = KernelHarness(cwd=str(many_pdfs), env={"RLM_DISPLAY": "widgets"})
    try:
        ok(kernel, "import json")
        bars: list[str] = []
        values: list[int] = []

        def on_message(msg: dict) -> None:
            content = msg["content"]
            if msg["msg_type"] == "comm_open" and content["data"]["state"].get("_model_name") == (
                "IntProgressModel"
            ):
                bars.append(content["comm_id"])
            elif msg["msg_type"] == "comm_msg" and content["comm_id"] in bars:
                if "value" in content["data"].get("state", {}):
                    values.append(content["data"]["state"]["value"])
                    if len(values) == 3:
                        kernel.interrupt()

        ex = kernel.execute("s = load_context('pdfs')\ns", timeout=600, on_message=on_message)
        assert ex.ok, str(ex)  # the interrupt ends the load, not the cell
        # the bar rises while files are read; its last value is the files kept (one fewer when the interrupt
        # landed after a file was counted and before it was kept)
        assert len(bars) == 1 and len(values) >= 3 and values[:-1] == sorted(values[:-1])
        states = [
            m["content"]["data"]["state"]
            for m in ex.messages
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == bars[0]
        ]
        opened = next(
            m["content"]["data"]["state"]
            for m in ex.messages
            if m["msg_type"] == "comm_open" and m["content"]["comm_id"] == bars[0]
        )
        assert opened["max"] == COPIES  # the bar counts files read of those found
        assert [s["bar_style"] for s in states if "bar_style" in s][-1] == "warning"  # interrupted
        assert "rlm-load-bar" in [c for s in states for c in s.get("_dom_classes", [])]
        shown = [d for d in ex.display if WIDGET_VIEW in d]
        assert shown and shown[0]["text/plain"].startswith("loading … pdfs/doc")  # the line, no widget repr
        assert "files" in shown[0]["text/plain"] and "skipped" in shown[0]["text/plain"]
        final = shown[-1]["text/plain"]
        assert final.startswith("interrupted: the files read before are the context: ")
        assert "the load was interrupted" in ex.result
        loaded = probe(kernel, "len(context_files)")
        assert 0 < loaded < COPIES and f"{loaded:,} of {COPIES:,} files" in final
        assert values[-1] == loaded
        assert kernel.is_alive()
    finally:
        kernel.shutdown()


def test_an_interrupt_before_any_file_was_read_keeps_the_earlier_context(tmp_path: Path) -> None:
    (tmp_path / "first.txt").write_text("the earlier context\n")
    (tmp_path / "slow").mkdir()
    messages = (
        f"From sender{i}@example.org Mon Jan  1 00:00:00 2024\nFrom: sender{i}@example.org\n"
        f"Subject: note {i}\n\nBody of message {i}: the ferry left at dawn.\n\n"
        for i in range(40_000)
    )
    (tmp_path / "slow" / "inbox.mbox").write_text("".join(messages))  # ~20 s of mail parsing
    env = {"RLM_CORPUS_MAX_MEMBERS": "100000", "RLM_CORPUS_FILE_SECONDS": "600"}
    kernel = KernelHarness(cwd=str(tmp_path), env=env)
    try:
        ok(kernel, "import json\ns = load_context('first.txt')")
        timer = threading.Timer(2.0, kernel.interrupt)

        def on_message(msg: dict) -> None:
            if msg["msg_type"] == "execute_input":
                timer.start()

        ex = kernel.execute("load_context('slow')", timeout=600, on_message=on_message)
        assert ex.status == "error" and ex.error_name == "KeyboardInterrupt", str(ex)
        assert ex.error_value == (
            "the load of slow was interrupted before any file was read: nothing was loaded, and `context` "
            "is unchanged"
        )
        earlier = probe(kernel, "[list(context_files), context.strip()]")
        assert earlier == [["first.txt"], "the earlier context"]
        assert kernel.is_alive()
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
