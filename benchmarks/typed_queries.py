"""The queries people type into find_relevant, over a mixed corpus of real code and English prose (issue 29).

`mixed_corpus(chars)`: Python (the stdlib), Go (Debian's golang-1.19-src), JavaScript and TypeScript (npm
tarballs) — equal shares, ~60 % together — and Jane Austen's novels cut at their chapters (~40 %), in a fixed
shuffled order, each file or chapter after a `=== name ===` line. Deterministic for a given interpreter.

Two query kinds, each a random 50-line chunk (the index's own 50/5 windows):
- `rare_word_queries`: the chunk's words of >= 4 characters that are not stop-words, compared in lower case,
  held by at most 5 % of the chunks (prose words such as `clumsy` as well as identifiers such as
  `byteOffsetFactor`; numbers such as `1024` are words too, as the issue does not set them apart); 3 of
  them at random, each with its original case (where it is first used in the chunk), joined by spaces. A
  returned chunk is a hit when it contains the lines the words were taken from (each word's first line in
  the chunk).
- `line_queries`: one comment or prose line of 6+ words of the chunk, as it stands; a hit when the returned
  chunk contains that line.
"""

from __future__ import annotations

import bisect
import random
import re
from collections import Counter

from benchmarks.corpora import read_corpus
from rlm_kernel.analysis.chunking import MAX_LINE, line_starts
from rlm_kernel.analysis.tokens import STOP_WORDS

__all__ = ["Query", "hit_chunks", "line_queries", "mixed_corpus", "rare_word_queries", "window_first_lines"]

_WORD = re.compile(r"\w+")
_CHAPTER = re.compile(r"^(?:CHAPTER|Chapter)\b", re.MULTILINE)
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*)\s*")
_CODE_PUNCT = re.compile(r"[{}();=<>\[\]]")
_THREE_WORDS = re.compile(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}")
CODE_LANGUAGES = ("python", "go", "javascript", "typescript")
PROSE_SHARE = 0.4
MAX_DF_SHARE = 0.05

Query = tuple[str, int, int]
"""(query, first line, last line): a returned chunk is a hit when it covers lines first..last."""


def mixed_corpus(chars: int) -> str:
    """~`chars` characters: code files and novel chapters, shuffled with a fixed seed, each after a marker."""
    code_each = int(chars * (1 - PROSE_SHARE) / len(CODE_LANGUAGES))
    parts = [
        f"=== {path.rsplit('/corpora/', 1)[-1]} ===\n{text}"
        for language in CODE_LANGUAGES
        for path, text in _capped(read_corpus(language, code_each + 200_000), code_each)
    ]
    prose_budget = chars - sum(map(len, parts))
    for path, text in read_corpus("prose"):
        name = path.rsplit("/", 1)[-1].removesuffix(".txt")
        cuts = [m.start() for m in _CHAPTER.finditer(text)] or [0]
        for i, (a, b) in enumerate(zip([0, *cuts[1:]], [*cuts[1:], len(text)], strict=True)):
            parts.append(f"=== {name}, part {i + 1} ===\n{text[a:b]}")
    prose = [p for p in parts if ", part " in p.split("\n", 1)[0]]
    code = [p for p in parts if p not in prose]
    random.Random(29).shuffle(prose)
    kept_prose, total = [], 0
    for p in prose:
        if total + len(p) > prose_budget:
            break
        kept_prose.append(p)
        total += len(p)
    mixed = code + kept_prose
    random.Random(17).shuffle(mixed)
    return "\n".join(mixed)[:chars]


def _capped(files: list[tuple[str, str]], budget: int) -> list[tuple[str, str]]:
    out, total = [], 0
    for path, text in files:
        if total >= budget:
            break
        out.append((path, text[: budget - total]))
        total += len(out[-1][1])
    return out


class _Lines:
    """Line numbers of the index's windows: window j covers lines [j*step, j*step + lines_per_chunk)."""

    def __init__(self, content: str, windows: list[tuple[int, int]]) -> None:
        self.starts = line_starts(content, MAX_LINE)
        self.line_of = {s: i for i, s in enumerate(self.starts)}
        self.first = [self.line_of[a] for a, _ in windows]
        self.n_lines = len(self.starts)

    def lines(self, content: str, j: int) -> list[tuple[int, str]]:
        first = self.first[j]
        last = self.first[j + 1] + 4 if j + 1 < len(self.first) else self.n_lines - 1  # the 5-line overlap
        last = min(last, self.n_lines - 1, first + 49)
        out = []
        for n in range(first, last + 1):
            end = self.starts[n + 1] if n + 1 < self.n_lines else len(content)
            out.append((n, content[self.starts[n] : end].rstrip("\r\n")))
        return out


def window_first_lines(content: str, windows: list[tuple[int, int]]) -> list[int]:
    """The number of each window's first line (for `hit_chunks`)."""
    return _Lines(content, windows).first


def rare_word_queries(content: str, windows: list[tuple[int, int]], n: int, seed: int = 29) -> list[Query]:
    """`n` queries of 3 rare words from one chunk (the protocol of issue 29)."""
    df = Counter(w for a, b in windows for w in {w.lower() for w in _WORD.findall(content, a, b)})
    max_df = MAX_DF_SHARE * len(windows)
    lines = _Lines(content, windows)
    rng = random.Random(seed)
    out: list[Query] = []
    for _ in range(n * 50):
        if len(out) == n:
            break
        j = rng.randrange(len(windows))
        first_line: dict[str, tuple[str, int]] = {}
        for number, text in lines.lines(content, j):
            for w in _WORD.findall(text):
                low = w.lower()
                if len(w) >= 4 and low not in first_line and low not in STOP_WORDS and df[low] <= max_df:
                    first_line[low] = (w, number)
        if len(first_line) < 3:
            continue
        picked = rng.sample(sorted(first_line), 3)
        numbers = [first_line[w][1] for w in picked]
        out.append((" ".join(first_line[w][0] for w in picked), min(numbers), max(numbers)))
    return out


def line_queries(content: str, windows: list[tuple[int, int]], n: int, seed: int = 30) -> list[Query]:
    """`n` queries: one comment or prose line of 6+ words from a random chunk, copied as it stands."""
    lines = _Lines(content, windows)
    rng = random.Random(seed)
    out: list[Query] = []
    for _ in range(n * 50):
        if len(out) == n:
            break
        j = rng.randrange(len(windows))
        texts = []
        for number, line in lines.lines(content, j):
            if _COMMENT.match(line):
                text = _COMMENT.sub("", line)
            elif line.strip() and not _CODE_PUNCT.search(line):
                text = line.strip()
            else:
                continue
            if len(_WORD.findall(text)) >= 6 and _THREE_WORDS.search(text):
                texts.append((text, number))
        if texts:
            text, number = rng.choice(texts)
            out.append((text, number, number))
    return out


def hit_chunks(windows_first_lines: list[int], query: Query, lines_per_chunk: int = 50) -> set[int]:
    """The chunks covering the query's lines (its own, or a neighbour when they are in an overlap)."""
    _, lo, hi = query
    j = bisect.bisect_right(windows_first_lines, lo)
    out = set()
    while j > 0 and hi < windows_first_lines[j - 1] + lines_per_chunk:
        out.add(j - 1)
        j -= 1
    return out
