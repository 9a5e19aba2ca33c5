"""The caps on untrusted corpus files, in process: the per-file time limit, pages, members, line length and
expanded size, each giving its reason; the format sniffing that picks a parser."""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path

import pytest

from rlm_kernel.repl.documents.caps import Caps, FileSkipped, deadline
from rlm_kernel.repl.documents.extract import extract_file, format_of
from tests.corpora.make_files import make_pdf


def test_the_deadline_stops_python_code() -> None:
    started = time.monotonic()
    with pytest.raises(FileSkipped, match="took over 0.2 s of CPU"):
        with deadline(0.2, "x"):
            while True:
                pass
    assert time.monotonic() - started < 30


def test_the_deadline_counts_cpu_not_waiting() -> None:
    """Time spent waiting (a busy machine, a slow disk) is not the file's: a parse that sleeps past its CPU
    allowance finishes, and one that waits past ten times the allowance is stopped."""
    with deadline(0.2, "x"):
        time.sleep(0.6)
    with pytest.raises(FileSkipped, match="took over 0.2 s of CPU"):
        with deadline(0.2, "x"):
            for _ in range(400):
                time.sleep(0.01)


def test_the_deadline_lets_quick_work_finish() -> None:
    with deadline(30, "x"):
        total = sum(range(1000))
    assert total == 499500


def test_a_file_over_its_time_limit_is_skipped(tmp_path: Path) -> None:
    mbox = tmp_path / "big.mbox"
    mbox.write_bytes(
        b"".join(b"From a@b Thu Jan 1 00:00:00 2026\nSubject: s%d\n\nbody\n\n" % i for i in range(20000))
    )
    out = extract_file(mbox, "big.mbox", "mbox", Caps(seconds=0.05, members=100000))
    assert out.files == [] and "took over 0.05 s of CPU (RLM_CORPUS_FILE_SECONDS)" in out.skipped[0]
    out = extract_file(mbox, "big.mbox", "mbox", Caps(seconds=600, members=100))
    assert "20,000 messages, over the 100 cap" in out.skipped[0]


def test_page_line_and_member_caps(tmp_path: Path) -> None:
    make_pdf(tmp_path / "p.pdf", [["text"]] * 4)
    out = extract_file(tmp_path / "p.pdf", "p.pdf", "pdf", Caps(pages=3))
    assert "4 pages, over the 3 page cap" in out.skipped[0]
    (tmp_path / "long.json").write_text('["' + "x" * 5000 + '"]')
    out = extract_file(tmp_path / "long.json", "long.json", "json", Caps(line_chars=1000))
    assert "over the 1,000 cap (RLM_CORPUS_MAX_LINE_CHARS)" in out.skipped[0]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(30):
            zf.writestr(f"m{i}.txt", "x")
    (tmp_path / "many.zip").write_bytes(buf.getvalue())
    out = extract_file(tmp_path / "many.zip", "many.zip", "zip", Caps(members=10))
    assert "30 members, over the 10 cap" in out.skipped[0]


def test_archives_inside_archives_stop_at_the_depth_cap(tmp_path: Path) -> None:
    data = b"deep text\n"
    for level in range(4):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(f"level{level}.zip" if level else "a.txt", data)
        data = buf.getvalue()
    (tmp_path / "nest.zip").write_bytes(data)
    out = extract_file(tmp_path / "nest.zip", "nest.zip", "zip", Caps())
    assert out.files == [] and "archives inside archives" in out.skipped[0]


@pytest.mark.parametrize(
    ("name", "head", "fmt"),
    [
        ("x.bin", b"%PDF-1.7\n", "pdf"),
        ("page", b"  <!DOCTYPE html><html>", "html"),
        ("mail", b"From a@b Mon\nSubject: x\n", "mbox"),
        ("t.parquet", b"PAR1\x00", "parquet"),
        ("notes.txt", b"plain words", "text"),
        ("blob", b"\x00\x01\x02", "binary"),
    ],
)
def test_formats_are_told_by_content_then_extension(tmp_path: Path, name: str, head: bytes, fmt: str) -> None:
    (tmp_path / name).write_bytes(head)
    assert format_of(tmp_path / name, name) == fmt
    assert format_of(tmp_path / name, name, "html") == "html"  # an explicit kind wins
