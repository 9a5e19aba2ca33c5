"""Every corpus format, from real files made here, loaded through a real kernel: text, positions, locate,
and hostile files skipped with their reasons while the kernel stays alive."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.corpora.make_files import make_corpus, make_hostile
from tests.kernel_client import KernelHarness, ok, probe

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def corpus_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KernelHarness, dict, dict]]:
    root = tmp_path_factory.mktemp("corpus")
    want = make_corpus(root / "docs")
    bad = make_hostile(root / "docs" / "hostile", bomb_mb=24)
    harness = KernelHarness(cwd=str(root), env={"RLM_CORPUS_MAX_EXPANDED_MB": "8"})
    try:
        ok(harness, "import json")
        yield harness, want, bad
    finally:
        harness.shutdown()


def test_every_format_loads_with_its_text(corpus_kernel) -> None:
    kernel, want, bad = corpus_kernel
    ex = ok(kernel, "summary = load_context('docs')\nsummary", timeout=300)
    assert "file(s)" in ex.result
    files = probe(kernel, "{k: list(v) for k, v in context_files.items()}")
    for name, phrase in want.items():
        key = f"docs/{name}"
        assert key in files, (key, sorted(files))
        start, end = files[key]
        assert probe(kernel, f"{json.dumps(phrase)} in context[{start}:{end}]"), name
    text = probe(kernel, "context")
    assert "var secret" not in text and "Archive links" not in text and "Copyright boilerplate" not in text
    assert "# Harbour news" in text and "## Tides" in text  # title and headings kept
    assert "Home" not in text.split("=== docs/page.html ===")[1].split("===")[0]


def test_hostile_files_are_skipped_with_their_reason(corpus_kernel) -> None:
    kernel, _, bad = corpus_kernel
    ok(kernel, "load_context('docs')", timeout=300)
    skipped = probe(kernel, "repr(load_context('docs'))")
    for name, word in bad.items():
        line = next((ln for ln in skipped.splitlines() if f"hostile/{name} (" in ln), None)
        assert line is not None, (name, skipped)
        assert word in line, (name, line)
    assert kernel.is_alive()
    files = probe(kernel, "list(context_files)")
    assert not any("hostile" in f for f in files)  # no partial load of any of them


@pytest.mark.parametrize(
    ("phrase", "path", "unit", "number"),
    [
        ("The cobalt mine closed in 1921.", "docs/report.pdf", "page", 2),
        ("Pears ripen in week 38.", "docs/inbox.mbox", "message", 2),
        ("print(7 * 6)", "docs/notes.ipynb", "cell", 2),
        ("Quito | 1010", "docs/rain.parquet", "record", 2),
        ("Quito,1010", "docs/rain.csv", "record", 2),
        ("A storm broke the northern pier.", "docs/book.epub", "chapter", 2),
    ],
)
def test_locate_round_trips(corpus_kernel, phrase: str, path: str, unit: str, number: int) -> None:
    kernel, _, _ = corpus_kernel
    ok(kernel, "load_context('docs')", timeout=300)
    place = probe(kernel, f"locate({json.dumps(phrase)})")
    assert place["path"] == path and place[unit] == number, place
    # the span and the offset give the same place; the line is the one the phrase is on, within its file
    start = probe(kernel, f"context.find({json.dumps(phrase)})")
    end = start + len(phrase)
    assert probe(kernel, f"locate({start})")[unit] == number
    span = probe(kernel, f"locate(({start}, {end}))")
    assert span["line"] == place["line"] and span["path"] == path
    file_start = probe(kernel, f"context_files[{json.dumps(path)}][0]")
    line_text = probe(kernel, f"context[{file_start}:].split(chr(10))[{place['line'] - 1}]")
    assert phrase in line_text


def test_locate_refuses_what_is_not_there(corpus_kernel) -> None:
    kernel, _, _ = corpus_kernel
    ok(kernel, "load_context('docs')", timeout=300)
    ex = kernel.execute("locate('no such words anywhere in it')")
    assert not ex.ok and "does not occur" in ex.all_text
    ex = kernel.execute("locate(10**12)")
    assert not ex.ok and "outside the context" in ex.all_text


def test_one_document_and_an_explicit_kind(corpus_kernel, tmp_path: Path) -> None:
    kernel, _, _ = corpus_kernel
    ex = ok(kernel, "load_context('docs/report.pdf')")
    assert "1 file(s)" in ex.result
    assert probe(kernel, "locate('wheat prices')['page']") == 1
    ex = kernel.execute("load_context('docs/hostile/truncated.pdf')")
    assert not ex.ok and "truncated.pdf (not a readable PDF" in ex.all_text
    ex = kernel.execute("load_context('docs/plain.txt', kind='pdf')")
    assert not ex.ok and "not a readable PDF" in ex.all_text
    ex = kernel.execute("load_context('docs', kind='spreadsheet')")
    assert not ex.ok and "unknown kind" in ex.all_text and "parquet" in ex.all_text
    ok(kernel, "%context docs/memo.docx")
    assert probe(kernel, "'twelve crates of saffron' in context")


def test_find_relevant_hits_carry_their_location(corpus_kernel) -> None:
    kernel, _, _ = corpus_kernel
    ok(kernel, "load_context('docs')", timeout=300)
    hits = probe(kernel, "find_relevant(context, 'cobalt mine', top_k=1, where=True)")
    [(chunk, score, place)] = hits
    assert "cobalt mine" in chunk and score > 0
    start = probe(kernel, f"context.find({json.dumps(chunk)})")
    assert place == probe(kernel, f"locate(({start}, {start + len(chunk)}))")  # where the chunk lies
    assert probe(kernel, "len(find_relevant(context, 'cobalt mine', top_k=1)[0])") == 2  # unchanged default
    ex = kernel.execute("find_relevant('some other text', 'cobalt', where=True)")
    assert not ex.ok and "loaded `context` only" in ex.all_text


def test_load_corpus_reads_the_same_formats(corpus_kernel) -> None:
    kernel, want, bad = corpus_kernel
    ok(kernel, "corpus = load_corpus('docs', partition_mb=0.01)", timeout=300)
    files = probe(kernel, "list(corpus.files)")
    for name in want:
        assert f"docs/{name}" in files, (name, files)
    skipped = probe(kernel, "list(corpus.skipped)")
    for name in bad:
        assert any(f"hostile/{name} (" in s for s in skipped), (name, skipped)
    hits = probe(kernel, "find_relevant(corpus, 'cobalt mine', top_k=1)")
    assert "The cobalt mine closed in 1921." in hits[0][0]
    assert "saffron" in probe(kernel, "find_relevant(corpus, 'saffron barge', top_k=1)")[0][0]
