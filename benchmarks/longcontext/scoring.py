"""Scorers: how an answer's text is graded against a case's expected value, each 0..1.

Rules after OOLONG: a number scores `0.75 ** |error|` (the first number in the answer); a label is exact (the
expected label appears as a word and no other label of the question does); a set of pairs scores F1; a key
fact (a code, a file, a name) must appear as a whole token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "first_number",
    "pair_f1",
    "parse_pairs",
    "score_label",
    "score_number",
    "score_token",
]

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_PAIR = re.compile(r"[\(\[\{]\s*['\"]?#?(\w+)['\"]?\s*(?:,|and|&|-)\s*['\"]?#?(\w+)['\"]?\s*[\)\]\}]")


def first_number(answer: str) -> float | None:
    """The first number written in `answer` (thousands separators ignored), or None."""
    match = _NUMBER.search(re.sub(r"(?<=\d),(?=\d{3}\b)", "", answer or ""))
    return float(match.group()) if match else None


def score_number(answer: str, expected: int) -> float:
    """OOLONG's numeric score: 0.75 to the power of the absolute error; 0 without a number."""
    got = first_number(answer)
    return 0.0 if got is None else 0.75 ** abs(got - expected)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", (text or "").lower())


def _has_phrase(words: list[str], phrase: str) -> bool:
    target = _words(phrase)
    n = len(target)
    return n > 0 and any(words[i : i + n] == target for i in range(len(words) - n + 1))


def score_label(answer: str, expected: str, labels: Iterable[str]) -> float:
    """1 if `expected` appears as a phrase and no other of `labels` does; else 0."""
    words = _words(answer)
    others = [label for label in labels if label != expected and not _has_phrase(_words(expected), label)]
    return float(_has_phrase(words, expected) and not any(_has_phrase(words, o) for o in others))


def score_token(answer: str, expected: str, rivals: Iterable[str] = ()) -> float:
    """1 if `expected` appears in `answer` as a whole token (case-sensitive) and none of `rivals` does."""

    def has(token: str) -> bool:
        return re.search(rf"(?<![\w]){re.escape(token)}(?![\w])", answer or "") is not None

    return float(has(expected) and not any(has(r) for r in rivals if r != expected))


def parse_pairs(answer: str) -> set[frozenset[str]]:
    """The unordered pairs written in `answer` as `(a, b)` / `[a, b]` / `(a and b)`."""
    return {frozenset((a, b)) for a, b in _PAIR.findall(answer or "") if a != b}


def pair_f1(answer: str, expected: Iterable[tuple[str, str]]) -> float:
    """F1 of the answer's pairs against the expected pairs (both unordered); 1 when both are empty."""
    want = {frozenset(p) for p in expected}
    got = parse_pairs(answer)
    if not want and not got:
        return 1.0
    hit = len(want & got)
    if hit == 0:
        return 0.0
    precision, recall = hit / len(got), hit / len(want)
    return 2 * precision * recall / (precision + recall)
