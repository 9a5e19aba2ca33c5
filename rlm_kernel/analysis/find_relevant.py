"""find_relevant: the chunks of a text most relevant to a query (SPEC-01.07-.12).

BM25 over ~50-line chunks with 5-line overlap after a keyword pre-filter; optionally re-ranked by the model.
"""

from __future__ import annotations

import re

from rlm_kernel.analysis.corpus import Corpus, partition_top, partitions_of, plain_int, plain_str
from rlm_kernel.analysis.errors import AnalysisInputError, FindRelevantError
from rlm_kernel.analysis.executor import imap
from rlm_kernel.analysis.heavy import load
from rlm_kernel.analysis.llm_calls import complete_batch
from rlm_kernel.llm.errors import BatchError

__all__ = ["LLM_POOL_MAX", "LLM_POOL_MIN", "find_relevant"]

LLM_POOL_MAX = 100
LLM_POOL_MIN = 20
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
SCORE_PROMPT = (
    "Rate how relevant the TEXT is to the QUERY on a scale from 0 (unrelated) to 10 (exactly what is asked "
    "for). Reply with the number only.\n\nQUERY: {query}\n\nTEXT:\n{chunk}"
)


def find_relevant(
    content: str | Corpus, query: str, top_k: int = 5, use_llm_scoring: bool = False
) -> list[tuple[str, float]]:
    """Find the sections of `content` (a str, or a Corpus from `load_corpus`) most relevant to `query`.

    Returns up to `top_k` (chunk, score) tuples, best first. Chunks are ~50-line slices of `content`
    overlapping by 5 lines; only chunks sharing a term with the query are candidates (keyword pre-filter).
    Identifiers match whole and by their snake_case/camelCase parts. Scores are BM25 times the share of
    the query's terms the chunk holds (to the 8th power: a chunk with all of them comes before one with
    fewer) times a breadth prior (a chunk of fewer distinct terms than the mean scores higher); a
    sentence-like query (4+ words) also favours chunks holding its adjacent word pairs in order. With
    `use_llm_scoring=True` and more than `top_k * 2` candidates, the best candidates (2*top_k+1, at least
    20, at most 100) are re-scored by the model on a 0-10 scale in one batch and that ranking is returned
    (ties broken by the keyword score).
    A Corpus is indexed partition by partition (on the Dask cluster when RLM_DASK_SCHEDULER is set) and the
    partitions' best chunks are merged by score; each partition is scored on its own.
    With where=True (the loaded `context` only), each hit is (chunk, score, place): place is locate()'s
    dict for the chunk ({"path", "line", "end_line", "page", …, "where": "report.pdf, page 2, lines 1-40"}).
    """
    if isinstance(content, Corpus):
        return _find_in_corpus(content, query, top_k, use_llm_scoring)
    _check(content, query, top_k, use_llm_scoring)
    if top_k == 0 or not content or not query.strip():
        return []
    ranking = load("rlm_kernel.analysis.ranking")  # numpy and bm25s, on first use
    index = ranking.get_index(content)
    windows = index.windows
    if not use_llm_scoring:
        return [
            (content[slice(*windows[i])], score)
            for i, score in ranking.phrase_rerank(content, index, query, top_k)
        ]
    ranked = ranking.phrase_rerank(content, index, query, min(LLM_POOL_MAX, max(top_k * 2 + 1, LLM_POOL_MIN)))
    if len(ranked) <= top_k * 2:
        return [(content[slice(*windows[i])], score) for i, score in ranked[:top_k]]
    return _llm_rerank(content, query, [(content[slice(*windows[i])], s) for i, s in ranked], top_k)


def _find_in_corpus(corpus: Corpus, query: str, top_k: int, use_llm_scoring: bool) -> list[tuple[str, float]]:
    parts = partitions_of(corpus, "find_relevant")
    _check("", query, top_k, use_llm_scoring)
    query, top_k = plain_str(query), plain_int(top_k)
    if top_k == 0 or not query.strip():
        return []
    pool_size = min(LLM_POOL_MAX, max(top_k * 2 + 1, LLM_POOL_MIN)) if use_llm_scoring else top_k
    merged: list[tuple[float, int, str]] = []
    order = 0
    for hits in imap(partition_top, parts, query, pool_size):
        for chunk, score in hits:
            merged.append((score, order, chunk))
            order += 1
        merged.sort(key=lambda x: (-x[0], x[1]))
        del merged[pool_size:]
    ranked = [(chunk, score) for score, _, chunk in merged]
    if not use_llm_scoring or len(ranked) <= top_k * 2:
        return ranked[:top_k]
    return _llm_rerank("", query, ranked, top_k)


def _llm_rerank(
    content: str, query: str, pool: list[tuple[str, float]], top_k: int
) -> list[tuple[str, float]]:
    prompts = [SCORE_PROMPT.replace("{query}", query).replace("{chunk}", chunk) for chunk, _ in pool]
    try:
        replies = complete_batch(
            prompts, model="auto", role="map", label="find_relevant scoring", max_tokens=8
        )
    except BatchError as exc:
        done = sum(r is not None for r in exc.results)
        raise FindRelevantError(
            f"find_relevant: LLM scoring stopped after {done} of {len(prompts)} calls ({exc}). "
            "The keyword ranking is in the error's .keyword_results; call again with use_llm_scoring=False "
            "or raise the budget.",
            keyword_results=pool[:top_k],
        ) from None
    scored = []
    for rank, ((chunk, bm25), reply) in enumerate(zip(pool, replies, strict=True)):
        m = _NUMBER.search(reply or "")
        llm = min(10.0, float(m.group())) if m else 0.0
        scored.append((llm, bm25, -rank, chunk))
    scored.sort(reverse=True)
    return [(chunk, llm) for llm, _, _, chunk in scored[:top_k]]


def _check(content: object, query: object, top_k: object, use_llm_scoring: object) -> None:
    if not isinstance(content, str):
        raise AnalysisInputError(
            "find_relevant: content must be a str or a Corpus from load_corpus(), "
            f"got {type(content).__name__}"
        )
    if not isinstance(query, str):
        raise AnalysisInputError(f"find_relevant: query must be a str, got {type(query).__name__}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise AnalysisInputError(f"find_relevant: top_k must be an int >= 0, got {top_k!r}")
    if not isinstance(use_llm_scoring, bool):
        raise AnalysisInputError(
            f"find_relevant: use_llm_scoring must be True or False, got {use_llm_scoring!r}"
        )
