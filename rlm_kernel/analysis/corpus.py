"""Corpora bigger than memory: the `Corpus` handed to cells, its partitions, the text work on one.

A corpus is a list of partitions — byte ranges of local files cut at line breaks — that is never loaded whole.
The partitions live in a kernel-side registry keyed by the `Corpus` object, so a cell sees only plain data
(source, file names, counts) and cannot make a corpus of its own files: only `load_corpus` registers one.
The module-level `partition_*` functions are the only code that runs on Dask workers (see `executor`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from rlm_kernel.analysis.errors import AnalysisInputError
from rlm_kernel.analysis.heavy import load

__all__ = [
    "Corpus",
    "Partition",
    "partition_parts",
    "plain_int",
    "plain_str",
    "partition_text",
    "partition_top",
    "partitions_of",
    "register",
]


@dataclass(frozen=True)
class Partition:
    """Bytes [start, end) of the file at `path` (an absolute, resolved path checked against the roots),
    widened to whole lines: a partition owns each line that starts inside its range."""

    path: str
    start: int
    end: int


@dataclass(frozen=True, eq=False)
class Corpus:
    """A corpus of text files read partition by partition (from `load_corpus`); pass it to `find_relevant`
    and `map_reduce` in place of a string. Attributes: source, files (names), partitions (count), bytes,
    skipped (reasons)."""

    source: str
    files: tuple[str, ...]
    partitions: int
    bytes: int
    skipped: tuple[str, ...] = ()
    """Files not in the corpus, each with its reason (a document that failed to parse, a binary file)."""

    def __repr__(self) -> str:
        more = f", … ({len(self.files) - 5} more)" if len(self.files) > 5 else ""
        shown = ", ".join(self.files[:5]) + more
        return (
            f"Corpus({self.source!r}: {len(self.files)} file(s), {self.bytes:,} bytes in "
            f"{self.partitions} partition(s): {shown}"
            + (f"; skipped {len(self.skipped)}: {'; '.join(self.skipped[:5])}" if self.skipped else "")
            + ")"
        )


_registry: weakref.WeakKeyDictionary[Corpus, tuple[Partition, ...]] = weakref.WeakKeyDictionary()


def register(corpus: Corpus, parts: tuple[Partition, ...]) -> Corpus:
    """Kernel side (`load_corpus`): remember the partitions of `corpus`, whose paths were checked already."""
    _registry[corpus] = parts
    return corpus


def partitions_of(corpus: Corpus, helper: str) -> tuple[Partition, ...]:
    """The registered partitions of `corpus`, or a clear error for a corpus `load_corpus` did not make."""
    parts = _registry.get(corpus)
    if parts is None:
        raise AnalysisInputError(
            f"{helper}: this Corpus was not made by load_corpus(); load one with load_corpus('data/*.txt')"
        )
    return parts


def plain_str(value: str) -> str:
    """An exact `str` copy of a str (subclass) without calling its methods: what is sent to workers must not
    be a cell's class, which pickling could carry (and run) off the kernel."""
    return "".join([value])


def plain_int(value: int) -> int:
    """An exact `int` of an int (subclass) without calling its methods (see `plain_str`)."""
    return int.__int__(value)


# -- text work on one partition (runs in the kernel or on a Dask worker) -------------------------------------
def partition_text(part: Partition) -> str:
    """The partition's text: the lines that start in [start, end), decoded as UTF-8 (bad bytes replaced)."""
    with open(part.path, "rb") as f:
        if part.start > 0:
            f.seek(part.start - 1)
            f.readline()  # the rest of a line that started before `start` belongs to the partition before
        pos = f.tell()
        data = f.read(max(part.end - pos, 0)) if pos < part.end else b""
        if data and not data.endswith(b"\n"):
            data += f.readline()
    return data.decode("utf-8", errors="replace")


def partition_top(part: Partition, query: str, top_k: int) -> list[tuple[str, float]]:
    """The best `top_k` (chunk, score) of the partition, as `find_relevant(partition_text(part), query)`.

    The index is built for this call only (not kept in the index cache), so one partition's index is in
    memory at a time."""
    text = partition_text(part)
    if not text:
        return []
    ranking = load("rlm_kernel.analysis.ranking")
    index = ranking.ChunkIndex.build(text)
    hits = ranking.phrase_rerank(text, index, query, top_k)
    return [(text[slice(*index.windows[i])], score) for i, score in hits]


def partition_parts(part: Partition, n: int, max_chars: int) -> list[str]:
    """The partition's text cut as `map_reduce` cuts a string: `n` parts at least, none over `max_chars`."""
    text = partition_text(part)
    if not text:
        return []
    n = max(n, -(-len(text) // max_chars))
    spans = load("rlm_kernel.analysis.chunking").split_even(text, n, max_part=max_chars)
    return [text[a:b] for a, b in spans]
