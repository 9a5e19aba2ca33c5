"""Code-aware tokenisation for ranking: identifiers kept whole and also split at snake_case and camelCase.

`terms_of(word)` is cached per distinct word, so tokenising large code is mostly C-speed `findall`.
"""

from __future__ import annotations

import re
from functools import lru_cache

import bm25s.stopwords

__all__ = ["STOP_WORDS", "WORD", "terms_of"]

WORD = re.compile(r"\w+")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_A-Za-z]+")

# the short English list bm25s uses: in code, words such as "self", "each" or "have" carry meaning
STOP_WORDS = frozenset(bm25s.stopwords.STOPWORDS_EN)


@lru_cache(maxsize=1 << 18)
def terms_of(word: str) -> tuple[str, ...]:
    """Index terms of one `\\w+` word: the word lower-cased, plus its snake/camel parts if it has several."""
    low = word.lower()
    if word.isdigit() or len(word) < 3:
        return (low,)
    parts = _PARTS.findall(word)
    if len(parts) <= 1:
        return (low,)
    out = [low]
    for p in parts:
        p = p.lower()
        if p != low and p not in out:
            out.append(p)
    return tuple(out)
