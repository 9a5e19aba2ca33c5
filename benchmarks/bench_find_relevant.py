"""find_relevant ranking quality and speed: ~10M characters mixing real code (Python, Go, JS, TS) with English
prose (`benchmarks.typed_queries`), and ~8M of real projects we did not write (`benchmarks.real_projects`),
per query kind.

The queries people type (issue 29: 3 rare words of one chunk; one comment or prose line) and known-item
queries, against plain BM25 (bm25s with its default tokenizer, same chunks, same run) and a keyword count.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Callable

import bm25s
import numpy as np

from benchmarks.common import Figure
from benchmarks.real_projects import project_texts
from benchmarks.typed_queries import hit_chunks, line_queries, mixed_corpus, window_first_lines
from benchmarks.typed_queries import rare_word_queries as typed_rare
from rlm_kernel.analysis import find_relevant
from rlm_kernel.analysis.ranking import ChunkIndex, clear_cache, get_index, phrase_rerank
from rlm_kernel.analysis.tokens import terms_of

__all__ = ["known_item_queries", "run"]

_WORD = re.compile(r"\w+")
FIRST_QUERY = "clumsy byteOffsetFactor antedate"


Pick = Callable[[random.Random, list[str]], str | None]


def _sample_queries(
    content: str, windows: list[tuple[int, int]], n: int, seed: int, pick: Pick, tries_per_query: int
) -> list[tuple[str, int]]:
    """(query, target chunk) pairs: a random chunk, `pick` makes a query from its interior lines (those not in
    the overlaps with its neighbours) or gives None to try another chunk."""
    rng = random.Random(seed)
    out: list[tuple[str, int]] = []
    tries = 0
    while len(out) < n and tries < n * tries_per_query:
        tries += 1
        target = rng.randrange(len(windows))
        a, b = windows[target]
        query = pick(rng, content[a:b].splitlines()[5:-5])
        if query is not None:
            out.append((query, target))
    return out


def known_item_queries(
    content: str, windows: list[tuple[int, int]], n: int, seed: int = 7
) -> list[tuple[str, int]]:
    """(query, target chunk) pairs: 3 distinct identifiers from lines only the target chunk holds."""

    def pick(rng: random.Random, lines: list[str]) -> str | None:
        words = sorted({w for w in _WORD.findall("\n".join(lines)) if len(w) >= 3 and not w.isdigit()})
        return " ".join(rng.sample(words, 3)) if len(words) >= 3 else None

    return _sample_queries(content, windows, n, seed, pick, 20)


def part_word_queries(
    content: str, windows: list[tuple[int, int]], n: int, seed: int = 11
) -> list[tuple[str, int]]:
    """(query, target) pairs written in plain words: the snake/camel parts of 2 compound identifiers of the
    target chunk (e.g. "parse header value" for parseHeaderValue) — what a person types."""

    def pick(rng: random.Random, lines: list[str]) -> str | None:
        words = sorted({w for w in _WORD.findall("\n".join(lines)) if len(terms_of(w)) >= 3})
        if len(words) < 2:
            return None
        return " ".join(p for w in rng.sample(words, 2) for p in terms_of(w)[1:])

    return _sample_queries(content, windows, n, seed, pick, 20)


def rare_word_queries(
    content: str, windows: list[tuple[int, int]], n: int, seed: int = 5
) -> list[tuple[str, int]]:
    """(query, target) pairs as a person types them: 2-3 rare identifiers or words of one chunk (words held by
    at most 1% of the chunks), e.g. "parse_header retry_after backoff"."""
    df = Counter(w for a, b in windows for w in {w.lower() for w in _WORD.findall(content, a, b)})
    rare = max(3, len(windows) // 100)

    def pick(rng: random.Random, lines: list[str]) -> str | None:
        text = "\n".join(lines)
        words = sorted(
            {w for w in _WORD.findall(text) if len(w) >= 3 and not w.isdigit() and df[w.lower()] <= rare}
        )
        k = rng.choice((2, 3))
        return " ".join(rng.sample(words, k)) if len(words) >= k else None

    return _sample_queries(content, windows, n, seed, pick, 50)


_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*)\s*")
_CODE_PUNCT = re.compile(r"[{}();=]")
_THREE_WORDS = re.compile(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}")


def sentence_queries(
    content: str, windows: list[tuple[int, int]], n: int, seed: int = 6
) -> list[tuple[str, int]]:
    """(query, target) pairs: one comment or prose line of 6+ words from the chunk, copied as it stands."""

    def pick(rng: random.Random, lines: list[str]) -> str | None:
        texts = [
            _COMMENT.sub("", line)
            for line in lines
            if _COMMENT.match(line) or (line.strip() and not _CODE_PUNCT.search(line))
        ]
        texts = [t for t in texts if len(_WORD.findall(t)) >= 6 and _THREE_WORDS.search(t)]
        return rng.choice(texts) if texts else None

    return _sample_queries(content, windows, n, seed, pick, 50)


def real_projects_corpus() -> str:
    """Every file of `benchmarks.real_projects` with its `=== path ===` marker, in a fixed shuffled order."""
    parts = [f"=== {path} ===\n{text}" for files in project_texts().values() for path, text in files]
    random.Random(1).shuffle(parts)
    return "\n".join(parts)


def real_project_figures(quick: bool) -> list[Figure]:
    """hit@1 per query kind and overall hit@5 on real projects, ours against plain BM25 in the same run."""
    content = real_projects_corpus()
    index = ChunkIndex.build(content)
    windows = index.windows
    n = 300 if quick else 1000
    kinds = {
        "rare identifiers/words": rare_word_queries(content, windows, n),
        "sentences (comment lines)": sentence_queries(content, windows, n),
    }
    bm25_rank, _ = bm25s_ranker(content, windows)
    clear_cache()

    def ours(query: str, k: int) -> list[int]:
        return [i for i, _ in phrase_rerank(content, index, query, k)]

    figures = []
    all5 = base5 = 0.0
    note = f"{len(content) / 1e6:.1f}M chars of Python, Go, JS, TS and prose from 13 real projects"
    for name, queries in kinds.items():
        o1, o5 = hits(ours, queries)
        b1, b5 = hits(bm25_rank, queries)
        all5 += o5 / len(kinds)
        base5 += b5 / len(kinds)
        figures.append(
            Figure(
                f"real projects hit@1, {name}",
                o1,
                "",
                baseline=b1,
                baseline_name="plain BM25 (bm25s)",
                target=">= BM25 + 0.02",
                met=o1 >= b1 + 0.02,
                note=f"{len(queries)} queries; {note}",
            )
        )
    figures.append(
        Figure(
            "real projects hit@5, all kinds",
            all5,
            "",
            baseline=base5,
            baseline_name="plain BM25 (bm25s)",
            target=">= BM25",
            met=all5 >= base5,
        )
    )
    return figures


def keyword_count_ranker(content: str, windows: list[tuple[int, int]]) -> Callable[[str, int], list[int]]:
    """The baseline: score = sum of the counts of the query's words in the chunk (lower-cased tokens)."""
    counts = [Counter(w.lower() for w in _WORD.findall(content, a, b)) for a, b in windows]

    def rank(query: str, k: int) -> list[int]:
        terms = [w.lower() for w in _WORD.findall(query)]
        scores = np.array([sum(c[t] for t in terms) for c in counts])
        return [int(i) for i in np.argsort(-scores, kind="stable")[:k] if scores[i] > 0]

    return rank


def bm25s_ranker(
    content: str, windows: list[tuple[int, int]]
) -> tuple[Callable[[str, int], list[int]], float]:
    """Plain BM25: bm25s with its default English tokenizer; returns the ranker and the index build time."""
    t0 = time.process_time()
    docs = [content[a:b] for a, b in windows]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    build = time.process_time() - t0

    def rank(query: str, k: int) -> list[int]:
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(docs))
        results, scores = retriever.retrieve(tokens, k=k, show_progress=False)
        return [int(d) for d, s in zip(results[0], scores[0], strict=True) if s > 0]

    return rank, build


def ours_ranker(content: str) -> Callable[[str, int], list[int]]:
    index = get_index(content)
    return lambda query, k: [i for i, _ in index.search(query, k)]


def hits(rank: Callable[[str, int], list[int]], queries: list[tuple[str, int]]) -> tuple[float, float]:
    h1 = h5 = 0
    for query, target in queries:
        got = rank(query, 5)
        h1 += bool(got) and got[0] == target
        h5 += target in got
    return h1 / len(queries), h5 / len(queries)


def cpu_median(fn: Callable[[], object], repetitions: int) -> float:
    times = []
    for _ in range(repetitions):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def typed_query_figures(
    content: str, index: ChunkIndex, bm25_rank: Callable[[str, int], list[int]], n: int
) -> list[Figure]:
    """hit@1 per kind and hit@5 overall for the issue-29 protocol, ours (find_relevant's ranking) vs bm25s."""
    windows = index.windows
    firsts = window_first_lines(content, windows)
    kinds = {
        "3 rare words of one chunk": typed_rare(content, windows, n),
        "a comment or prose line": line_queries(content, windows, n),
    }

    def ours(query: str, k: int) -> list[int]:
        return [i for i, _ in phrase_rerank(content, index, query, k)]

    def score(rank: Callable[[str, int], list[int]], queries: list) -> tuple[float, float]:
        h1 = h5 = 0
        for q in queries:
            good = hit_chunks(firsts, q)
            got = rank(q[0], 5)
            h1 += bool(got) and got[0] in good
            h5 += bool(good.intersection(got))
        return h1 / len(queries), h5 / len(queries)

    figures = []
    o5_all = b5_all = 0.0
    note = f"{len(windows)} chunks, {len(content) / 1e6:.1f}M chars: stdlib, Go, JS, TS and Austen's novels"
    for name, queries in kinds.items():
        (o1, o5), (b1, b5) = score(ours, queries), score(bm25_rank, queries)
        o5_all += o5 / len(kinds)
        b5_all += b5 / len(kinds)
        figures.append(
            Figure(
                f"code+prose hit@1, {name}",
                o1,
                "",
                baseline=b1,
                baseline_name="plain BM25 (bm25s)",
                target=">= BM25 + 0.02",
                met=o1 >= b1 + 0.02,
                note=f"{len(queries)} queries; {note}",
            )
        )
    figures.append(
        Figure(
            "code+prose hit@5, all queries",
            o5_all,
            "",
            baseline=b5_all,
            baseline_name="plain BM25 (bm25s)",
            target=">= BM25",
            met=o5_all >= b5_all,
        )
    )
    return figures


def run(quick: bool) -> list[Figure]:
    figures = real_project_figures(quick)
    big = mixed_corpus(10_000_000)
    clear_cache()
    # first calls (index + query), ours and bm25s's index alternating, best of 2 each (a busy machine inflates
    # single runs); ours from a cold index cache and word-splitting cache each time, as in a fresh kernel
    firsts, bm25_builds = [], []
    for _ in range(2):
        clear_cache()
        terms_of.cache_clear()
        t0 = time.process_time()
        find_relevant(big, FIRST_QUERY)
        firsts.append(time.process_time() - t0)
        index = get_index(big)
        bm25_rank, bm25_build = bm25s_ranker(big, index.windows)
        bm25_builds.append(bm25_build)
    first_call, bm25_build = min(firsts), min(bm25_builds)
    windows = index.windows
    queries = known_item_queries(big, windows, 300 if quick else 1000)
    base_rank = keyword_count_ranker(big, windows)
    figures += typed_query_figures(big, index, bm25_rank, 300 if quick else 1000)
    ours = ours_ranker(big)
    k1, k5 = hits(base_rank, queries)
    b1, b5 = hits(bm25_rank, queries)
    o1, o5 = hits(ours, queries)
    note = f"{len(queries)} known-item queries, {len(windows)} chunks, {len(big) / 1e6:.1f}M chars"
    figures += [
        Figure(
            "hit@1 (ours)",
            o1,
            "",
            baseline=b1,
            baseline_name="plain BM25 (bm25s)",
            target=">= BM25",
            met=o1 >= b1,
            note=note,
        ),
        Figure("hit@1 vs keyword count", o1, "", baseline=k1, baseline_name="sum of keyword counts"),
        Figure("hit@5 (ours)", o5, "", baseline=b5, baseline_name="plain BM25 (bm25s)", met=o5 >= b5),
        Figure("hit@5 vs keyword count", o5, "", baseline=k5, baseline_name="sum of keyword counts"),
    ]
    words = part_word_queries(big, windows, 300 if quick else 1000)
    w1, w5 = hits(ours, words)
    wb1, wb5 = hits(bm25_rank, words)
    figures += [
        Figure(
            "hit@1 plain-word queries for identifiers (ours)",
            w1,
            "",
            baseline=wb1,
            baseline_name="plain BM25 (bm25s)",
            met=w1 >= wb1,
            note="query = snake/camel parts of 2 compound identifiers of the chunk",
        ),
        Figure(
            "hit@5 plain-word queries for identifiers (ours)",
            w5,
            "",
            baseline=wb5,
            baseline_name="plain BM25 (bm25s)",
            met=w5 >= wb5,
        ),
    ]
    qs = [q for q, _ in queries[:100]]
    cycle = iter(qs * 1000)
    repeated = cpu_median(lambda: find_relevant(big, next(cycle)), 200)
    bm25_query = cpu_median(lambda: bm25_rank(next(cycle), 5), 50)
    figures += [
        Figure(
            "first call at 10M chars (index + query)",
            first_call,
            "s CPU",
            baseline=bm25_build,
            baseline_name="bm25s tokenize+index (best of 2 each, alternating)",
            target="<= 1.0x bm25s",
            met=first_call <= bm25_build,
            note=f"first pair of the process: {firsts[0]:.3f} s vs {bm25_builds[0]:.3f} s",
        ),
        Figure(
            "repeated query at 10M chars",
            repeated * 1e3,
            "ms CPU",
            baseline=bm25_query * 1e3,
            baseline_name="bm25s tokenize+retrieve",
            target="<= 1 ms",
            met=repeated <= 0.001,
        ),
    ]
    small = big[:100_000]
    small_windows = ChunkIndex.build(small).windows
    small_q = known_item_queries(small, small_windows, 20, seed=3)
    it = iter(small_q * 100)

    def cold() -> None:
        clear_cache()
        find_relevant(small + " ", next(it)[0])  # a new string object each time: nothing cached

    def cold_bm25() -> None:
        rank, _ = bm25s_ranker(small, small_windows)
        rank(next(it)[0], 5)

    cold_ours = cpu_median(cold, 21)
    cold_base = cpu_median(cold_bm25, 21)
    figures.append(
        Figure(
            "cold find_relevant at 100K chars",
            cold_ours * 1e3,
            "ms CPU",
            baseline=cold_base * 1e3,
            baseline_name="bm25s chunk+tokenize+index+query",
            target="< 20 ms (spec: < 2 s)",
            met=cold_ours < 0.020,
        )
    )
    return figures
