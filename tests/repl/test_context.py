"""In-process tests of context loading: strings, files, directories, globs, refusals, encodings, big files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl import textfile
from rlm_kernel.repl.errors import ContextError


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")  # only this root (see sandbox/roots.py)
    yield tmp_path


def make_tree(root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "a.txt").write_text("alpha\n")
    (root / "docs" / "b.md").write_text("beta é\n")
    (root / "docs" / "sub").mkdir()
    (root / "docs" / "sub" / "c.txt").write_text("gamma\n")
    (root / "docs" / ".hidden").write_text("secret\n")
    (root / "docs" / "blob.bin").write_bytes(b"\x00\x01\x02")


def test_plain_string_is_text(root: Path) -> None:
    loaded = ctxmod.load("What is the capital of France? It is Paris.")
    assert loaded.value == "What is the capital of France? It is Paris."
    assert loaded.kind == "text"
    assert loaded.summary().chars == len(loaded.value)


def test_directory_corpus_markers_and_offsets(root: Path) -> None:
    make_tree(root)
    loaded = ctxmod.load("docs")
    text = loaded.value
    assert list(loaded.files) == ["docs/a.txt", "docs/b.md", "docs/sub/c.txt"]
    for path, (start, end) in loaded.files.items():
        assert text[start:end] == (root / path).read_text()
        marker = f"=== {path} ===\n"
        assert text[start - len(marker) : start] == marker
    assert "secret" not in text
    assert any("blob.bin" in s for s in loaded.skipped)
    with pytest.raises(TypeError):
        loaded.files["x"] = (0, 1)  # read-only index


def test_glob(root: Path) -> None:
    make_tree(root)
    loaded = ctxmod.load("docs/**/*.txt")
    assert loaded.kind == "glob"
    assert list(loaded.files) == ["docs/a.txt", "docs/sub/c.txt"]
    with pytest.raises(ContextError, match="matches no files"):
        ctxmod.load("docs/*.nothing")


def test_refused_path_names_the_rule(root: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside") / "x.txt"
    outside.write_text("no")
    with pytest.raises(ContextError, match="outside the allowed roots.*RLM_CONTEXT_ROOTS"):
        ctxmod.load(str(outside))
    with pytest.raises(ContextError, match="outside the allowed roots"):
        ctxmod.load("/etc/*")
    (root / "link").symlink_to(outside)
    with pytest.raises(ContextError, match="outside the allowed roots"):
        ctxmod.load("./link")
    (root / "d").mkdir()
    (root / "d" / "ok.txt").write_text("fine")
    (root / "d" / "escape.txt").symlink_to(outside)
    for source in ("d", "d/*.txt"):
        loaded = ctxmod.load(source)
        assert list(loaded.files) == ["d/ok.txt"] and "no" not in loaded.value.replace("=== d/ok.txt ===", "")
        assert loaded.skipped == ("d/escape.txt (a link to outside the allowed roots)",)
    (root / "fifo").mkdir()
    os.mkfifo(root / "fifo" / "pipe")
    with pytest.raises(ContextError, match="not a regular file"):
        ctxmod.load("fifo/pipe")


def test_env_roots_add_to_the_notebook_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"{tmp_path}{os.pathsep}{other}")
    monkeypatch.delenv("RLM_CONTEXT_ROOTS_ONLY", raising=False)
    assert ctxmod.allowed_roots() == [ctxmod._start_dir, tmp_path.resolve(), other.resolve()]
    (tmp_path / "f.txt").write_text("hello")
    assert ctxmod.load(str(tmp_path / "f.txt")).value == "hello"


@pytest.mark.parametrize("how", ["leading =", "RLM_CONTEXT_ROOTS_ONLY"])
def test_env_roots_replace_the_notebook_directory_only_when_asked(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "leading =":
        monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")
        monkeypatch.delenv("RLM_CONTEXT_ROOTS_ONLY", raising=False)
    else:
        monkeypatch.setenv("RLM_CONTEXT_ROOTS", str(tmp_path))
        monkeypatch.setenv("RLM_CONTEXT_ROOTS_ONLY", "1")
    assert ctxmod.allowed_roots() == [tmp_path.resolve()]
    with pytest.raises(ContextError, match="outside the allowed roots"):
        ctxmod.check_allowed(ctxmod._start_dir / "README.md")


def test_missing_path_suggests_text_kind(root: Path) -> None:
    with pytest.raises(ContextError, match="kind='text'"):
        ctxmod.load("./nope.txt")
    assert ctxmod.load("./nope.txt", kind="text").value == "./nope.txt"


def test_non_utf8_refused_clearly_or_decoded(root: Path) -> None:
    (root / "latin.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(ContextError, match=r"not valid utf-8.*byte 3.*encoding='latin-1'"):
        ctxmod.load("latin.txt")
    assert ctxmod.load("latin.txt", encoding="latin-1").value == "café"
    assert ctxmod.load("latin.txt", errors="replace").value == "caf\ufffd"


def test_bom_stripped(root: Path) -> None:
    (root / "bom.txt").write_bytes(b"\xef\xbb\xbfhello")
    assert ctxmod.load("bom.txt").value == "hello"


def test_summary_never_whole_text(root: Path) -> None:
    loaded = ctxmod.load("x" * 100_000, kind="text")
    summary = loaded.summary()
    assert summary.chars == 100_000
    assert len(repr(summary)) < 2_000 and len(summary._repr_html_()) < 2_000


def test_data_kinds(root: Path) -> None:
    assert ctxmod.load(["a", "b"]).value == ["a", "b"]
    with pytest.raises(ContextError, match="cannot load a context from a int"):
        ctxmod.load(3)


@pytest.mark.parametrize(
    "content",
    [
        b"ascii only\n" * 1_000_000,
        b"\xef\xbb\xbf" + b"ascii after a BOM\n" * 600_000,
        "latin-1 range: café\n".encode() * 500_000,
        "ünïcødé ✓\n".encode() * 600_000,
        ("plain " * 2_000_000).encode() + "🙂 astral at the end".encode(),
    ],
    ids=["ascii", "bom", "latin1-kind", "ucs2-kind", "ucs4-kind"],
)
def test_big_file_paths_match_plain_decode(root: Path, content: bytes) -> None:
    assert len(content) >= textfile.BIG_FILE
    path = root / "big.txt"
    path.write_bytes(content)
    text = textfile.read_text(path)
    expected = content.decode("utf-8-sig")
    assert text == expected and hash(text) == hash(expected) and len(text) == len(expected)
    assert sys.getsizeof(text) == sys.getsizeof(expected)  # same (canonical) storage kind
    assert text.isascii() == expected.isascii() and text[-5:] == expected[-5:]


def test_big_file_with_bad_bytes_refused(root: Path) -> None:
    path = root / "bad.txt"
    path.write_bytes(b"a" * textfile.BIG_FILE + b"\xff")
    with pytest.raises(textfile.DecodeRefused, match=f"byte {textfile.BIG_FILE}"):
        textfile.read_text(path)
    far = 20 * 1024 * 1024 + 1  # past the first 16 MiB decoding chunk, after a split 2-byte sequence
    path.write_bytes(
        b"a" * (16 * 1024 * 1024 - 1) + "é".encode() + b"b" * (far - 16 * 1024 * 1024 - 1) + b"\xff"
    )
    with pytest.raises(textfile.DecodeRefused, match=f"byte {far}:"):
        textfile.read_text(path)


def test_in_place_paths_available() -> None:
    assert textfile._factory is not None, "the no-copy paths should be available on CPython"


def test_big_non_utf8_encoding_and_replace(root: Path) -> None:
    path = root / "latin.txt"
    path.write_bytes("déjà vu\n".encode("latin-1") * 1_200_000)
    assert textfile.read_text(path, encoding="latin-1") == "déjà vu\n" * 1_200_000
    with pytest.raises(textfile.DecodeRefused, match="byte 1:"):
        textfile.read_text(path)
    assert textfile.read_text(path, errors="replace")[:4] == "d\ufffdj\ufffd"
    assert (
        textfile.read_text(path, errors="surrogateescape").encode("utf-8", "surrogateescape")
        == path.read_bytes()
    )


def test_unknown_encoding(root: Path) -> None:
    (root / "x.txt").write_text("x")
    with pytest.raises(textfile.DecodeRefused, match="unknown encoding"):
        textfile.read_text(root / "x.txt", encoding="klingon")


def test_big_corpus_assembled_in_place_matches_join(root: Path) -> None:
    (root / "big").mkdir()
    (root / "big" / "a.txt").write_bytes(b"alpha line\n" * 500_000)
    (root / "big" / "b.txt").write_text("bêta ✓\n" * 400_000)
    (root / "big" / "c.txt").write_text("gamma\n")
    loaded = ctxmod.load("big")
    expected = "".join(
        f"=== big/{n} ===\n{(root / 'big' / n).read_text()}\n\n" for n in ("a.txt", "b.txt", "c.txt")
    )
    assert loaded.value == expected and hash(loaded.value) == hash(expected)
    assert sys.getsizeof(loaded.value) == sys.getsizeof(expected)
    for name, (start, end) in loaded.files.items():
        assert loaded.value[start:end] == (root / name).read_text()
