"""An interrupt in the middle of a corpus load, at a known file: the files read before it are the context
(whole, with their positions), the summary says how many were not read; an interrupt before any file was
read raises a KeyboardInterrupt saying that nothing was loaded. Text files (read while the context is put
together, in memory or, from 8 MiB on, written in place) and parsed documents (PDF) alike.

The interrupt is a real KeyboardInterrupt raised by the load's progress callback after the k-th file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel.repl import context as ctxmod
from tests.corpora.make_files import make_pdf


def _interrupt_at(k: int):  # noqa: ANN202 - a progress callback
    seen: list[str] = []

    def progress(name: str, size: int, skipped: int) -> None:
        seen.append(name)
        if len(seen) == k:
            raise KeyboardInterrupt

    progress.seen = seen  # type: ignore[attr-defined]
    return progress


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")
    return tmp_path


@pytest.mark.parametrize("size", [2_000, 600_000], ids=["in memory", "in place (over 8 MiB)"])
def test_text_files_read_before_the_interrupt_are_the_context(roots: Path, size: int) -> None:
    folder = roots / "texts"
    folder.mkdir()
    for i in range(30):
        (folder / f"f{i:02}.txt").write_text(f"file {i} starts\n" + "x" * size + f"\nfile {i} ends\n")
    loaded = ctxmod.load(str(folder), progress=_interrupt_at(10))
    assert list(loaded.files) == [str(folder / f"f{i:02}.txt") for i in range(9)]
    for name, (start, end) in loaded.files.items():
        assert loaded.value[start:end] == Path(name).read_text()
    assert loaded.skipped[-1] == f"21 file(s) not read: {ctxmod.INTERRUPTED_NOTE}"
    assert "21 file(s) not read: the load was interrupted" in repr(loaded.summary())


def test_an_interrupt_before_any_file_was_read_loads_nothing(roots: Path) -> None:
    folder = roots / "texts"
    folder.mkdir()
    for i in range(3):
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    with pytest.raises(KeyboardInterrupt) as err:
        ctxmod.load(str(folder), progress=_interrupt_at(1))
    assert str(err.value) == (
        f"the load of {folder} was interrupted before any file was read: nothing was loaded, and `context` "
        "is unchanged"
    )


def test_parsed_documents_read_before_the_interrupt_are_the_context(roots: Path) -> None:
    folder = roots / "pdfs"
    folder.mkdir()
    for i in range(8):
        make_pdf(folder / f"d{i}.pdf", [[f"document {i} page one"], [f"document {i} page two"]])
    loaded = ctxmod.load(str(folder), progress=_interrupt_at(5))
    assert list(loaded.files) == [str(folder / f"d{i}.pdf") for i in range(4)]
    assert "document 3 page two" in loaded.value and "document 4" not in loaded.value
    assert loaded.skipped[-1] == f"4 file(s) not read: {ctxmod.INTERRUPTED_NOTE}"
    with pytest.raises(KeyboardInterrupt, match="before any file was read"):
        ctxmod.load(str(folder), progress=_interrupt_at(1))
