"""word_spans: the spans of `re.finditer(r"\\w+")` and one hash per distinct word, by numpy (find_relevant's
tokeniser), on any text: ASCII, other scripts, lone surrogates, long words and words across block edges."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rlm_kernel.analysis.wordspans import BLOCK, EXACT_HASH_ABOVE, word_spans

WORD = re.compile(r"\w+")


def _check(text: str) -> None:
    starts, ends, hashes = word_spans(text)
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == [m.span() for m in WORD.finditer(text)]
    words = [text[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
    by_hash: dict[int, str] = {}
    for word, h in zip(words, hashes.tolist(), strict=True):
        assert by_hash.setdefault(h, word) == word, f"{word!r} and {by_hash[h]!r} share a hash"
    assert len(by_hash) == len(set(words))  # and equal words share one


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("ab_1 \n\t.")))
def test_same_spans_as_the_regex_and_one_hash_per_word(text: str) -> None:
    _check(text)


def test_scripts_digits_surrogates_and_punctuation() -> None:
    _check("naïve café ΑΣ σ 東京 ٣٤ x² _a_ a-b 'q' \ud800 lone\udfffsurrogate\u00a0nbsp end")
    _check("")
    _check("   ...   ")


def test_words_longer_than_the_polynomial_hash_allows_are_hashed_exactly() -> None:
    long_a, long_b = "a" * (EXACT_HASH_ABOVE + 1), "a" * EXACT_HASH_ABOVE + "b"
    _check(f"{long_a} {long_b} {long_a} {'x' * EXACT_HASH_ABOVE} {long_b}")


def test_a_text_over_several_blocks_keeps_the_words_on_block_edges_whole() -> None:
    text = "word1 " * (BLOCK // 6 + 7) + "αβγ " * (BLOCK // 4 + 3)
    starts, ends, hashes = word_spans(text)
    assert len(starts) == len(WORD.findall(text))
    assert (ends - starts).tolist() == [len(w) for w in WORD.findall(text)]
    assert len(np.unique(hashes)) == 2


def test_a_word_longer_than_a_block_is_cut_at_the_block_edge() -> None:
    text = "x" * (BLOCK + 10) + " tail"
    starts, ends, _ = word_spans(text)
    assert starts.tolist() == [0, BLOCK, BLOCK + 11]
    assert ends.tolist() == [BLOCK, BLOCK + 10, BLOCK + 15]
