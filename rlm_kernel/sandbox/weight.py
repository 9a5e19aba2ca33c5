"""What one comparison of two items can cost, measured at C speed: `comparison_weight` (ordering.py and
compare.py use it to decide whether one C call over many items stays short)."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable
from typing import Any

__all__ = ["comparison_weight"]

_NUMBERS = frozenset({float, bool, type(None)})
_TEXT = frozenset({str, bytes})
_SIZED = _NUMBERS | _TEXT | {int}


def _flat_weight(kinds: set[type], items: list[Any]) -> int | None:
    """The widest item of numbers, ints and text (in chars/bytes or 64-bit words), None for other types."""
    if not kinds <= _SIZED:
        return None
    weight = 1
    if int in kinds:
        ints = items if kinds == {int} else [x for x in items if type(x) is int]
        weight = max(weight, max(map(int.bit_length, ints), default=0) // 64 + 1)
    if kinds & _TEXT:
        texts = items if kinds <= _TEXT else [x for x in items if type(x) in _TEXT]
        weight = max(weight, max(map(len, texts), default=0) + 1)
    return weight


def comparison_weight(items: list[Any]) -> int | None:
    """What one comparison of two of `items` can cost at most (characters / bytes / 64-bit words, one level
    into tuples: the sum over their positions), or None when it cannot be told (other types: Decimal,
    classes of cells, nested tuples). Measured with C-level passes (map, itemgetter) where the records have
    one shape and each position one type, as records usually do."""
    if not items:
        return 1
    kinds = set(map(type, items))
    if tuple not in kinds:
        return _flat_weight(kinds, items)
    if kinds != {tuple}:
        return None  # comparing a tuple with anything else raises; let C raise it
    widths = set(map(len, items))
    if len(widths) == 1:  # records of one shape: weigh each position on its own
        columns: Iterable[list[Any]] = (list(map(operator.itemgetter(i), items)) for i in range(min(widths)))
        longest = 1
    else:
        columns = [list(itertools.chain.from_iterable(items))]
        longest = max(widths)
    weight = 1
    for column in columns:
        inner = set(map(type, column))
        if tuple in inner:
            return None
        part = _flat_weight(inner, column)
        if part is None:
            return None
        weight += part * longest
    return weight
