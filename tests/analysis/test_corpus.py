"""Corpora read partition by partition: partition boundaries, and find_relevant/map_reduce on a corpus exactly
matching the same helpers on each partition's text (in-process; the Dask runs are in test_corpus_dask)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlm_kernel.analysis import AnalysisInputError, find_relevant, map_reduce
from rlm_kernel.analysis.corpus import Corpus, partition_text, partitions_of
from rlm_kernel.analysis.map_reduce import MAX_CHUNK_CHARS
from rlm_kernel.repl.corpus import load_corpus
from rlm_kernel.repl.errors import ContextError
from tests.llm_server import LLMTestServer

WORDS = "alpha beta gamma delta parse_config load_user retry_budget socket frame token cache".split()


def write_corpus(root: Path, files: int, lines: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for f in range(files):
        body = "\n".join(
            f"line {f}:{i} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))
            for i in range(lines)
        )
        (root / f"part{f:02d}.txt").write_text(body + ("\n" if f % 2 else ""))  # some end without newline


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")  # only this root (see sandbox/roots.py)
    yield tmp_path


def test_partitions_cover_every_line_once(roots: Path) -> None:
    write_corpus(roots, files=3, lines=400)
    (roots / "long.txt").write_text("x" * 5000 + "\nshort\n" + "y" * 3000)  # lines longer than a partition
    corpus = load_corpus(str(roots), partition_mb=1000 / 2**20)
    parts = partitions_of(corpus, "test")
    assert corpus.partitions == len(parts) > 20
    for name in corpus.files:
        whole = (roots / name).read_text()
        pieces = [partition_text(p) for p in parts if p.path == str((roots / name).resolve())]
        assert "".join(pieces) == whole
        filled = [piece for piece in pieces if piece]  # a partition inside a long line is ""
        assert all(piece.endswith("\n") for piece in filled[:-1])


def test_find_relevant_on_one_partition_equals_the_whole_text(roots: Path) -> None:
    write_corpus(roots, files=1, lines=3000)
    whole = (roots / "part00.txt").read_text()
    corpus = load_corpus(str(roots / "part00.txt"))
    assert corpus.partitions == 1
    for query in ("parse_config", "retry budget socket", "load user retry budget cache frame"):
        assert find_relevant(corpus, query, top_k=7) == find_relevant(whole, query, top_k=7)


def test_find_relevant_merges_the_best_hits_of_every_partition(roots: Path) -> None:
    write_corpus(roots, files=5, lines=700)
    corpus = load_corpus(str(roots / "*.txt"), partition_mb=20_000 / 2**20)
    texts = [partition_text(p) for p in partitions_of(corpus, "test")]
    assert len(texts) > 5
    for query in ("parse_config", "frame token", "alpha beta gamma delta socket"):
        merged = sorted(
            (hit for t in texts for hit in find_relevant(t, query, top_k=6)), key=lambda h: -h[1]
        )  # sorted() is stable: ties stay in partition order
        assert find_relevant(corpus, query, top_k=6) == merged[:6]
    assert find_relevant(corpus, "nothing-matches-this", top_k=3) == []


def test_map_reduce_maps_each_partition_like_its_text(roots: Path, session_llm: LLMTestServer) -> None:
    write_corpus(roots, files=3, lines=300)
    corpus = load_corpus(str(roots), partition_mb=6_000 / 2**20)
    texts = [partition_text(p) for p in partitions_of(corpus, "test")]
    session_llm.reply_with(lambda r: "SUMMARY" if r.last_user.startswith("SUM") else f"[{len(r.last_user)}]")
    answer = map_reduce(corpus, "COUNT {chunk}", "SUM {results}", n_chunks=len(texts) * 2)
    assert answer == "SUMMARY"
    maps = [r.last_user for r in session_llm.requests if r.last_user.startswith("COUNT")]
    expected_parts: list[str] = []
    for text in texts:
        since = len(session_llm.requests)
        map_reduce(text, "COUNT {chunk}", "SUM {results}", n_chunks=2)
        expected_parts += [
            r.last_user for r in session_llm.requests[since:] if r.last_user.startswith("COUNT")
        ]
    assert sorted(maps) == sorted(expected_parts)  # calls of one batch arrive in any order
    assert sum(len(m.removeprefix("COUNT ")) for m in maps) == sum(map(len, texts))
    assert all(len(m) <= MAX_CHUNK_CHARS + 6 for m in maps)


def test_a_corpus_not_made_by_load_corpus_is_refused(roots: Path) -> None:
    forged = Corpus("/etc", ("passwd",), 1, 100)
    with pytest.raises(AnalysisInputError, match="not made by load_corpus"):
        find_relevant(forged, "root")
    with pytest.raises(AnalysisInputError, match="not made by load_corpus"):
        map_reduce(forged, "m", "r")


def test_load_corpus_keeps_to_the_allowed_roots(
    roots: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("secret")
    with pytest.raises(ContextError, match="outside the allowed roots"):
        load_corpus(str(outside))
    with pytest.raises(ContextError, match="outside the allowed roots"):
        load_corpus(str(outside / "*.txt"))
    (roots / "link.txt").symlink_to(outside / "secret.txt")
    (roots / "ok.txt").write_text("fine\n")
    (roots / "blob.bin").write_bytes(b"\0\1\2")
    corpus = load_corpus(str(roots))
    assert [Path(f).name for f in corpus.files] == ["ok.txt"]
    with pytest.raises(ContextError, match="matches no files"):
        load_corpus(str(roots / "*.none"))
    with pytest.raises(ContextError, match="partition_mb"):
        load_corpus(str(roots), partition_mb=0)


def test_only_plain_values_are_sent_to_partition_work(
    roots: Path, monkeypatch: pytest.MonkeyPatch, session_llm: LLMTestServer
) -> None:
    """A cell's str/int subclass never reaches the executor (pickling could carry a cell class to workers)."""
    import sys

    from rlm_kernel.analysis import executor

    fr, mr = (sys.modules[f"rlm_kernel.analysis.{name}"] for name in ("find_relevant", "map_reduce"))

    class Sneaky(str):
        def __reduce__(self):  # would run on unpickling
            raise AssertionError("a cell's class was pickled")

    class Number(int):
        def __mul__(self, other):  # noqa: ANN001
            raise AssertionError("a cell's method ran")

    seen: list[tuple] = []

    def recording_imap(fn, items, *args, window=0):  # noqa: ANN001, ANN202
        seen.append(args)
        return executor.imap(fn, items, *args, window=window)

    monkeypatch.setattr(fr, "imap", recording_imap)
    monkeypatch.setattr(mr, "imap", recording_imap)
    write_corpus(roots, files=2, lines=100)
    corpus = load_corpus(str(roots))
    find_relevant(corpus, Sneaky("alpha"), top_k=Number(2))
    map_reduce(corpus, "m", "r", n_chunks=Number(3))
    assert seen and all(type(a) in (str, int) for args in seen for a in args), seen


def test_load_corpus_never_reads_secret_files(roots: Path) -> None:
    (roots / "notes.txt").write_text("plain notes\n")
    (roots / ".env").write_text("API_KEY=sk-live-secret\n")
    (roots / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    (roots / "sub").mkdir()
    (roots / "sub" / "credentials").write_text("aws_secret_access_key = x\n")
    assert [Path(f).name for f in load_corpus(str(roots)).files] == ["notes.txt"]
    assert [Path(f).name for f in load_corpus(str(roots / "**" / "*"), partition_mb=1).files] == ["notes.txt"]
    with pytest.raises(ContextError, match="secrets file"):
        load_corpus(str(roots / "server.pem"))
