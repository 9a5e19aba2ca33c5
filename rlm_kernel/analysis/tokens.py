"""Code-aware tokenisation for ranking: identifiers kept whole and also split at snake_case and camelCase.

`terms_of(word)` is cached per distinct word, so tokenising large code is mostly C-speed `findall`.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["STOP_WORDS", "WORD", "query_terms", "terms_of"]

WORD = re.compile(r"\w+")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_A-Za-z]+")

STOP_WORDS = frozenset(
    """a an and are as at be but by for from has have how i if in into is it its of on or that the their then
    there these this those to was were what when where which who why will with does do did can could should
    would about all any some me my we our you your not no""".split()
)


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


def query_terms(query: str) -> list[str]:
    """Distinct terms of a query in order, stop-words dropped unless nothing else is left."""
    terms: list[str] = []
    for word in WORD.findall(query):
        for t in terms_of(word):
            if t not in terms:
                terms.append(t)
    kept = [t for t in terms if t not in STOP_WORDS]
    return kept or terms
