"""BM25 index over ~50-line overlapping chunks of one text, code-aware terms, cached per content string.

Chunks are (start, end) offsets. The text is tokenised once by numpy (`wordspans`: spans and hashes, no str
per word; overlaps are not re-read), equal words grouped by one stable sort of their hashes, and the index is
a term-major sparse matrix of BM25 (Lucene variant, as bm25s) scores built with numpy, reused by later
queries.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from rlm_kernel.analysis.chunking import MAX_LINE, line_starts
from rlm_kernel.analysis.tokens import STOP_WORDS, WORD, terms_of
from rlm_kernel.analysis.wordspans import word_spans
from rlm_kernel.llm.session import current_session

__all__ = ["ChunkIndex", "clear_cache", "get_index", "phrase_rerank"]

LINES_PER_CHUNK = 50
OVERLAP = 5
K1 = 1.2
B = 0.75
# measured on the mixed code + prose benchmark (benchmarks/typed_queries.py) and the 13 real projects
COVERAGE_POWER = 8.0
LENGTH_POWER = 0.5
_CACHE_ENTRIES = 4
_CACHE_MAX_CHARS = 200_000_000


@dataclass
class ChunkIndex:
    """Chunk offsets, the term vocabulary and a term-major (CSC) matrix of BM25 scores."""

    windows: list[tuple[int, int]]
    vocab: dict[str, int]
    indptr: np.ndarray  # term t's chunks are indices[indptr[t]:indptr[t+1]]
    indices: np.ndarray
    data: np.ndarray
    breadth: np.ndarray  # per chunk: (distinct terms / their mean over chunks) ** -LENGTH_POWER

    @classmethod
    def build(
        cls, content: str, lines_per_chunk: int = LINES_PER_CHUNK, overlap: int = OVERLAP
    ) -> ChunkIndex:
        if not 0 <= overlap * 2 <= lines_per_chunk:
            raise ValueError("overlap must be at most half of lines_per_chunk")
        empty = np.empty(0, dtype=np.int64)
        if not content:
            return cls([], {}, np.zeros(1, dtype=np.int64), empty, np.empty(0, dtype=np.float32), empty)
        starts = line_starts(content, MAX_LINE)
        n_lines = len(starts)
        step = lines_per_chunk - overlap
        n_chunks = 1 if n_lines <= lines_per_chunk else 1 + -(-(n_lines - lines_per_chunk) // step)
        offset = starts.__getitem__

        def at(line: int) -> int:
            return offset(line) if line < n_lines else len(content)

        windows = [(at(j * step), at(min(j * step + lines_per_chunk, n_lines))) for j in range(n_chunks)]
        # pieces: [step*j, step*j+overlap) (shared by chunks j-1 and j) and [step*j+overlap, step*(j+1))
        bounds = [min(n_lines, step * j + d) for j in range(n_chunks + 1) for d in (0, overlap)] + [n_lines]
        starts_w, ends_w, hashes = word_spans(content)
        if not len(starts_w):
            ones = np.ones(n_chunks)
            return cls(windows, {}, np.zeros(1, dtype=np.int64), empty, np.empty(0, dtype=np.float32), ones)
        # a word is in the piece where it starts
        piece_at = np.fromiter(map(at, bounds), dtype=np.int64, count=len(bounds))
        lens = np.diff(np.searchsorted(starts_w, piece_at))
        piece = np.repeat(np.arange(len(lens)), lens)
        # equal words by their hash: a stable sort keeps each word's uses in text order, so the runs of one
        # (word, piece) are adjacent and counted without a second sort
        perm = np.argsort(hashes, kind="stable")
        sorted_hashes = hashes[perm]
        new_word = np.empty(len(perm), dtype=bool)
        new_word[0] = True
        np.not_equal(sorted_hashes[1:], sorted_hashes[:-1], out=new_word[1:])
        del sorted_hashes
        piece = piece[perm]
        new_run = new_word.copy()
        new_run[1:] |= piece[1:] != piece[:-1]
        run_at = np.flatnonzero(new_run)
        count = np.diff(np.append(run_at, len(perm)))
        # words numbered in order of first use (the first of each hash group, the sort being stable)
        first_use = perm[np.flatnonzero(new_word)]
        by_use = np.argsort(first_use)
        rank = np.empty(len(by_use), dtype=np.int64)
        rank[by_use] = np.arange(len(by_use))
        word_id = rank[np.cumsum(new_word)[run_at] - 1]
        piece = piece[run_at]
        del perm, new_word, new_run
        uses = first_use[by_use].tolist()
        first = [content[a:b] for a, b in zip(starts_w[uses].tolist(), ends_w[uses].tolist(), strict=True)]
        n_words = len(first)
        # word -> its terms (the word itself and its snake/camel parts)
        # a lower-case ASCII word is its only term: skip terms_of's regex for most prose and many identifiers
        term_lists = [(w,) if w.isalpha() and w.islower() and w.isascii() else terms_of(w) for w in first]
        all_terms = list(itertools.chain.from_iterable(term_lists))
        vocab = {t: i for i, t in enumerate(dict.fromkeys(all_terms))}
        n_terms_of = np.fromiter(map(len, term_lists), dtype=np.int64, count=n_words)
        w_ptr = np.concatenate(([0], np.cumsum(n_terms_of)))
        w_terms = np.fromiter(map(vocab.__getitem__, all_terms), dtype=np.int64, count=len(all_terms))
        rep = n_terms_of[word_id]
        total = int(rep.sum())
        within = np.arange(total) - np.repeat(np.cumsum(rep) - rep, rep)
        term = w_terms[np.repeat(w_ptr[word_id], rep) + within]
        piece = np.repeat(piece, rep)
        count = np.repeat(count, rep)
        # pieces -> chunks: piece 2j+1 is in chunk j; piece 2j in chunk j and chunk j-1
        own = piece // 2
        keep = own < n_chunks
        prev_mask = (piece % 2 == 0) & (piece >= 2)
        chunk = np.concatenate((own[keep], own[prev_mask] - 1))
        term = np.concatenate((term[keep], term[prev_mask]))
        count = np.concatenate((count[keep], count[prev_mask]))
        n_vocab = len(vocab)
        key = term * n_chunks + chunk
        count_bits = int(count.max()).bit_length()
        if (n_vocab * n_chunks).bit_length() + count_bits <= 63:
            # (key, count) packed in one int64: a plain sort (SIMD in numpy) instead of an argsort + gathers
            key = (key << count_bits) | count
            key.sort()
            count = key & ((1 << count_bits) - 1)
            key >>= count_bits
        else:
            order = np.argsort(key, kind="stable")
            key, count = key[order], count[order]
        first_of_run = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        tf = np.add.reduceat(count, first_of_run).astype(np.float32)
        key = key[first_of_run]
        term, chunk = key // n_chunks, key % n_chunks
        doc_len = np.bincount(chunk, weights=tf, minlength=n_chunks)
        df = np.bincount(term, minlength=n_vocab)
        avg = float(doc_len.mean()) or 1.0
        idf = np.log(1.0 + (n_chunks - df + 0.5) / (df + 0.5))
        norm = K1 * (1.0 - B + B * doc_len / avg)
        data = (idf[term] * tf / (tf + norm[chunk])).astype(np.float32)
        indptr = np.concatenate(([0], np.cumsum(df)))
        distinct = np.bincount(chunk, minlength=n_chunks).astype(np.float64)
        breadth = (np.maximum(distinct, 1.0) / max(float(distinct.mean()), 1.0)) ** -LENGTH_POWER
        return cls(windows, vocab, indptr, chunk, data, breadth)

    def candidates(self, terms: list[str]) -> np.ndarray:
        """Keyword pre-filter: the sorted indices of chunks containing at least one of `terms`."""
        cols = [self.indices[self.indptr[t] : self.indptr[t + 1]] for t in self._ids(terms)]
        if not cols:
            return np.empty(0, dtype=np.int64)
        return np.unique(np.concatenate(cols))

    def search(self, query: str, top_k: int) -> list[tuple[int, float]]:
        """(chunk index, score) of the best `top_k` candidate chunks, best first; ties in text order.

        The score is BM25 times (the share of the query's distinct terms the chunk contains) ** COVERAGE_POWER
        times the chunk's breadth factor (fewer distinct terms than the mean chunk: above 1).
        """
        ids = self._ids(self.query_terms(query))
        if top_k <= 0 or not ids:
            return []
        spans = [slice(self.indptr[t], self.indptr[t + 1]) for t in ids]
        chunks = np.concatenate([self.indices[s] for s in spans])
        scores = np.concatenate([self.data[s] for s in spans])
        cand, inverse = np.unique(chunks, return_inverse=True)
        total = np.bincount(inverse, weights=scores, minlength=len(cand))
        # coordination: weight by the share of the query's terms the chunk holds, to a high power (a chunk
        # with all of them beats one with fewer, however often it repeats them) ...
        total *= (np.bincount(inverse, minlength=len(cand)) / len(ids)) ** COVERAGE_POWER
        # ... and breadth: of two chunks holding the same words, the one with fewer distinct terms is more
        # about them (BM25's length norm counts repeats; a chunk of many different words is a weaker match)
        total *= self.breadth[cand]
        order = np.lexsort((cand, -total))[:top_k]
        return [(int(cand[i]), float(total[i])) for i in order]

    def query_terms(self, query: str) -> list[str]:
        """The query's terms: a word indexed whole is searched whole; other words by their snake/camel parts.

        Stop-words are dropped unless nothing else is left.
        """
        terms: list[str] = []
        for word in WORD.findall(query):
            whole, *parts = terms_of(word)
            chosen = [whole] if whole in self.vocab or not parts else parts
            terms += [t for t in chosen if t not in terms]
        kept = [t for t in terms if t not in STOP_WORDS]
        return kept or terms

    def _ids(self, terms: list[str]) -> list[int]:
        return [tid for t in dict.fromkeys(terms) if (tid := self.vocab.get(t)) is not None]


# sentence-like queries (this many words or more) re-rank their best PHRASE_POOL chunks by the share of the
# query's word pairs the chunk holds in order: +4 points hit@1 on comment-line queries over real projects
PHRASE_MIN_WORDS = 4
PHRASE_POOL = 20
PHRASE_WEIGHT = 1.0


def phrase_rerank(content: str, index: ChunkIndex, query: str, top_k: int) -> list[tuple[int, float]]:
    """`index.search(query, top_k)`, with sentence-like queries re-ranked by the word pairs they share.

    A chunk's score is multiplied by 1 + PHRASE_WEIGHT * (share of the query's adjacent word pairs that
    also stand next to each other in the chunk); identifier queries (fewer words) are left as they are.
    """
    words = [w.lower() for w in WORD.findall(query)]
    if len(words) < PHRASE_MIN_WORDS or top_k <= 0:
        return index.search(query, top_k)
    ranked = index.search(query, max(top_k, PHRASE_POOL))
    pairs = set(itertools.pairwise(words))
    rescored = []
    for chunk, score in ranked:
        a, b = index.windows[chunk]
        found = WORD.findall(content, a, b)
        held = pairs.intersection(itertools.pairwise(map(str.lower, found)))
        rescored.append((score * (1.0 + PHRASE_WEIGHT * len(held) / len(pairs)), chunk))
    rescored.sort(key=lambda x: (-x[0], x[1]))
    return [(chunk, score) for score, chunk in rescored[:top_k]]


class _IndexCache:
    """A small LRU of built indexes keyed by the text itself; one per LLM session (`LLMSession.slot`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: OrderedDict[str, ChunkIndex] = OrderedDict()


def _session_cache() -> _IndexCache:
    return current_session().slot("analysis.ranking", _IndexCache)


def get_index(content: str) -> ChunkIndex:
    """The index of `content`, built on first use and kept in the session's small LRU keyed by the string."""
    cache = _session_cache()
    with cache.lock:
        hit = cache.entries.get(content)
        if hit is not None:
            cache.entries.move_to_end(content)
            return hit
    index = ChunkIndex.build(content)
    if len(content) < 20_000:
        return index  # cheap to rebuild; keep the cache for texts worth caching
    with cache.lock:
        entries = cache.entries
        entries[content] = index
        while len(entries) > _CACHE_ENTRIES or (
            len(entries) > 1 and sum(map(len, entries)) > _CACHE_MAX_CHARS
        ):
            entries.popitem(last=False)
    return index


def clear_cache() -> None:
    """Forget every index cached in this session (benchmarks measure cold builds with it)."""
    cache = _session_cache()
    with cache.lock:
        cache.entries.clear()
