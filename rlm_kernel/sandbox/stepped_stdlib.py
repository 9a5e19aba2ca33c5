"""`operator`'s comparisons and searches, `bisect`, `heapq` and `itertools.groupby` whose item comparisons the
time limit can stop.

The C functions compare lists, tuples, deques and dicts in one uninterruptible call (`operator.eq` of two
lists of 10**5 equal 10**7-character texts: minutes; `bisect`/`heapq` over lists of such lists alike). Here
they go through compare.py's stepped comparison: the C function still runs when the value being placed or
searched for bounds every comparison's cost (`value_weight`: scalars, flat records), else a Python-level
version of the same algorithm compares with `checked_compare` (the pure-Python code of CPython's own
bisect.py and heapq.py, so the results are the same).
"""

from __future__ import annotations

import bisect as _bisect
import heapq as _heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from rlm_kernel.sandbox.compare import (
    COMPARE_GUARDS,
    checked_compare,
    checked_contains,
    count_of,
    index_of,
    value_weight,
)
from rlm_kernel.sandbox.ordering import python_level
from rlm_kernel.sandbox.weight import comparison_weight

__all__ = ["BISECT_NAMES", "HEAPQ_NAMES", "OPERATOR_NAMES", "groupby"]

_FAST = frozenset({int, float, bool})


_GUARDED_LT = COMPARE_GUARDS["_lt_"]  # scalars and short flat records compare in C (each one is bounded)


def _lt(a: Any, b: Any) -> Any:
    if type(a) in _FAST and type(b) in _FAST:
        return a < b
    return _GUARDED_LT(a, b)


class _Ordered:
    """A key whose `<`/`>` is the stepped comparison (C heaps and sorts of these can be stopped)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: Any) -> Any:
        return checked_compare("<", self.value, other.value if type(other) is _Ordered else other)

    def __gt__(self, other: Any) -> Any:
        return checked_compare(">", self.value, other.value if type(other) is _Ordered else other)

    def __eq__(self, other: object) -> Any:
        return checked_compare("==", self.value, other.value if type(other) is _Ordered else other)

    __hash__ = None  # type: ignore[assignment]


_LIGHT_KEY = 64  # weight of a key compared in C (heapify, sorted, max and groupby loop over many in one call)


def _stepped_key(key: Any) -> Callable[[Any], Any]:
    """A key for C heaps/sorts: the value itself when every comparison with it is cheap (a weight of at most
    `_LIGHT_KEY`: one C call compares many keys, `nsmallest`'s `sorted` and `heapify`, `merge`'s heap of all
    the iterables, so a bounded but long text would still cost minutes), else `_Ordered`."""
    key = python_level(key)

    def wrapped(item: Any) -> Any:
        value = item if key is None else key(item)
        if type(value) in _FAST:
            return value
        weight = value_weight(value)
        return value if weight is not None and weight <= _LIGHT_KEY else _Ordered(value)

    return wrapped


# -- bisect: CPython's bisect.py ---------------------------------------------------------------------------
def bisect_right(a: Any, x: Any, lo: int = 0, hi: int | None = None, *, key: Any = None) -> int:
    if value_weight(x) is not None:
        return _bisect.bisect_right(a, x, lo, hi, key=python_level(key))
    if lo < 0:
        raise ValueError("lo must be non-negative")
    hi = len(a) if hi is None else hi
    key = python_level(key)
    while lo < hi:
        mid = (lo + hi) // 2
        if checked_compare("<", x, a[mid] if key is None else key(a[mid])):
            hi = mid
        else:
            lo = mid + 1
    return lo


def bisect_left(a: Any, x: Any, lo: int = 0, hi: int | None = None, *, key: Any = None) -> int:
    if value_weight(x) is not None:
        return _bisect.bisect_left(a, x, lo, hi, key=python_level(key))
    if lo < 0:
        raise ValueError("lo must be non-negative")
    hi = len(a) if hi is None else hi
    key = python_level(key)
    while lo < hi:
        mid = (lo + hi) // 2
        if checked_compare("<", a[mid] if key is None else key(a[mid]), x):
            lo = mid + 1
        else:
            hi = mid
    return lo


def insort_right(a: Any, x: Any, lo: int = 0, hi: int | None = None, *, key: Any = None) -> None:
    lo = bisect_right(a, x if key is None else python_level(key)(x), lo, hi, key=key)
    a.insert(lo, x)


def insort_left(a: Any, x: Any, lo: int = 0, hi: int | None = None, *, key: Any = None) -> None:
    lo = bisect_left(a, x if key is None else python_level(key)(x), lo, hi, key=key)
    a.insert(lo, x)


BISECT_NAMES: dict[str, Any] = {
    "bisect": bisect_right,
    "bisect_right": bisect_right,
    "bisect_left": bisect_left,
    "insort": insort_right,
    "insort_right": insort_right,
    "insort_left": insort_left,
}
for _name, _fn in BISECT_NAMES.items():
    _fn.__doc__ = getattr(_bisect, _name).__doc__


# -- heapq: CPython's heapq.py -----------------------------------------------------------------------------
def _siftdown(heap: list[Any], startpos: int, pos: int) -> None:
    newitem = heap[pos]
    while pos > startpos:
        parentpos = (pos - 1) >> 1
        parent = heap[parentpos]
        if _lt(newitem, parent):
            heap[pos] = parent
            pos = parentpos
            continue
        break
    heap[pos] = newitem


def _siftup(heap: list[Any], pos: int) -> None:
    endpos = len(heap)
    startpos = pos
    newitem = heap[pos]
    childpos = 2 * pos + 1
    while childpos < endpos:
        rightpos = childpos + 1
        if rightpos < endpos and not _lt(heap[childpos], heap[rightpos]):
            childpos = rightpos
        heap[pos] = heap[childpos]
        pos = childpos
        childpos = 2 * pos + 1
    heap[pos] = newitem
    _siftdown(heap, startpos, pos)


def _checked_list(heap: Any) -> list[Any]:
    if not isinstance(heap, list):
        raise TypeError("heap argument must be a list")
    return heap


def heappush(heap: Any, item: Any, /) -> None:
    if value_weight(item) is not None:
        return _heapq.heappush(heap, item)  # C: every comparison is with `item`
    _checked_list(heap).append(item)
    _siftdown(heap, 0, len(heap) - 1)
    return None


def heappop(heap: Any, /) -> Any:
    lastelt = _checked_list(heap).pop()
    if heap:
        returnitem = heap[0]
        heap[0] = lastelt
        _siftup(heap, 0)
        return returnitem
    return lastelt


def heapreplace(heap: Any, item: Any, /) -> Any:
    returnitem = _checked_list(heap)[0]
    heap[0] = item
    _siftup(heap, 0)
    return returnitem


def heappushpop(heap: Any, item: Any, /) -> Any:
    if _checked_list(heap) and _lt(heap[0], item):
        item, heap[0] = heap[0], item
        _siftup(heap, 0)
    return item


def heapify(heap: Any, /) -> None:
    weight = comparison_weight(_checked_list(heap) if type(heap) is list else list(heap))
    if weight is not None and weight * len(heap) <= 1 << 24:
        return _heapq.heapify(heap)
    for i in reversed(range(len(heap) // 2)):
        _siftup(heap, i)
    return None


def nlargest(n: int, iterable: Iterable[Any], key: Any = None) -> list[Any]:
    return _heapq.nlargest(n, iterable, key=_stepped_key(key))


def nsmallest(n: int, iterable: Iterable[Any], key: Any = None) -> list[Any]:
    return _heapq.nsmallest(n, iterable, key=_stepped_key(key))


def merge(*iterables: Iterable[Any], key: Any = None, reverse: bool = False) -> Any:
    return _heapq.merge(*iterables, key=_stepped_key(key), reverse=reverse)


HEAPQ_NAMES: dict[str, Any] = {
    "heappush": heappush,
    "heappop": heappop,
    "heapify": heapify,
    "heapreplace": heapreplace,
    "heappushpop": heappushpop,
    "nlargest": nlargest,
    "nsmallest": nsmallest,
    "merge": merge,
}
for _name, _fn in HEAPQ_NAMES.items():
    _fn.__doc__ = getattr(_heapq, _name).__doc__


# -- itertools.groupby: C compares each key with the previous one --------------------------------------------
def groupby(iterable: Iterable[Any], key: Any = None) -> Any:
    """itertools.groupby whose key comparisons are stepped when a key is costly (the keys handed out are the
    real ones)."""
    for wrapped, group in itertools.groupby(iterable, _stepped_key(key)):
        yield (wrapped.value if type(wrapped) is _Ordered else wrapped), group


# -- operator ----------------------------------------------------------------------------------------------
def _contains(a: Any, b: Any, /) -> bool:
    return checked_contains(b, a)


OPERATOR_NAMES: dict[str, Any] = {
    "eq": COMPARE_GUARDS["_eq_"],
    "ne": COMPARE_GUARDS["_ne_"],
    "lt": COMPARE_GUARDS["_lt_"],
    "le": COMPARE_GUARDS["_le_"],
    "gt": COMPARE_GUARDS["_gt_"],
    "ge": COMPARE_GUARDS["_ge_"],
    "contains": _contains,
    "countOf": count_of,
    "indexOf": index_of,
}
