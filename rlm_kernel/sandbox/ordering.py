"""Sorting and min/max whose comparisons the time limit can stop: `chunked_sort`, `checked_min`/`checked_max`.

A C sort or min/max is one uninterruptible loop whose cost is comparisons × the cost of one comparison, and
the second factor is what a count of items does not see: two 10**7-character strings that differ only at the
end take a millisecond to compare, so `sorted([a, b] * 10**5)` or `max([a, b] * 10**5)` ran for minutes on a
list of 200 000 items. Before calling C, `comparison_weight` measures what one comparison can cost (the
longest text, the widest int, one level into tuples; None for anything else) at C speed; when the whole C
call stays cheap it runs as before, otherwise each comparison goes through Python code (`_Ordered`), where
the timers can stop it, at a few times the cost. Large cheap lists are sorted in runs of SORT_CHUNK items
merged by the Python-level heapq.merge (stable, the same result as sorted()).
"""

from __future__ import annotations

import heapq
import itertools
import math
import types
from collections.abc import Callable, Iterable
from typing import Any

from rlm_kernel.sandbox.compare import checked_compare as _compare
from rlm_kernel.sandbox.weight import comparison_weight

__all__ = [
    "SORT_CHUNK",
    "checked_max",
    "checked_min",
    "chunked_sort",
    "comparison_weight",
    "python_level",
    "runs_python",
]

SORT_CHUNK = 1 << 20  # items one C sort handles at a time (about 0.5 s for random floats on this machine)
_CHEAP = 64  # weight (characters, bytes or 64-bit words) under which a comparison counts as one step
_C_WORK = 1 << 26  # comparisons x weight allowed in one C call (~0.05 s of memcmp)
_CHUNK = 1024  # items min/max hand to one C call


def runs_python(fn: Any) -> bool:
    """True if calling `fn` runs Python bytecode (so the time limit can stop a C loop calling it per item)."""
    return isinstance(fn, (types.FunctionType, types.MethodType))


def python_level(fn: Any) -> Any:
    """`fn`, or a Python wrapper around it when it is C code: per-item callbacks of C loops (map, filter,
    sorted(key=…), max(key=…)) then give the time limit a chance at every item."""
    if fn is None or runs_python(fn):
        return fn

    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return call


class _Ordered:
    """A sort key whose comparison is Python code (the timers can stop a C sort between two of them)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Ordered) -> bool:
        return _compare("<", self.value, other.value)  # lists/tuples item by item (compare.py)

    def __gt__(self, other: _Ordered) -> bool:
        return _compare(">", self.value, other.value)


def _cheap_for_c(weight: int | None, n: int) -> bool:
    if weight is None:
        return False
    return weight <= _CHEAP or n * max(1.0, math.log2(n or 1)) * weight <= _C_WORK


def chunked_sort(items: list[Any], key: Any = None, reverse: bool = False) -> list[Any]:
    """sorted(items, key=key, reverse=reverse) that the time limit can stop (see the module docstring)."""
    n = len(items)
    if n < 2 and key is None:  # with a key, Python's sorted calls it even on one item (it may raise)
        return list(items)
    if key is not None:
        keys = list(map(python_level(key), items))
        weight = comparison_weight(keys)
        if _cheap_for_c(weight, n):
            order = sorted(range(n), key=keys.__getitem__, reverse=reverse)
        else:
            wrapped = list(map(_Ordered, keys))
            order = sorted(range(n), key=wrapped.__getitem__, reverse=reverse)
        return list(map(items.__getitem__, order))
    weight = comparison_weight(items)
    if not _cheap_for_c(weight, n):
        return [o.value for o in sorted(map(_Ordered, items), reverse=reverse)]
    if n <= SORT_CHUNK:
        return sorted(items, reverse=reverse)
    runs = [sorted(items[i : i + SORT_CHUNK], reverse=reverse) for i in range(0, n, SORT_CHUNK)]
    return list(heapq.merge(*runs, reverse=reverse))


_MISSING = object()


def _extreme(builtin: Callable[..., Any], better: Callable[[Any, Any], bool]) -> Callable[..., Any]:
    def extreme(*args: Any, key: Any = None, default: Any = _MISSING) -> Any:
        if not args:
            raise TypeError(f"{builtin.__name__} expected at least 1 argument, got 0")
        if len(args) > 1:
            if default is not _MISSING:
                raise TypeError(
                    f"Cannot specify a default for {builtin.__name__}() with multiple positional arguments"
                )
            iterable: Iterable[Any] = args
        else:
            iterable = args[0]
        key = python_level(key)
        it = iter(iterable)
        best: Any = _MISSING
        best_key: Any = None
        while True:
            chunk = list(itertools.islice(it, _CHUNK))
            if not chunk:
                break
            keys = chunk if key is None else list(map(key, chunk))
            if _cheap_for_c(comparison_weight(keys), len(keys)):
                index = builtin(range(len(keys)), key=keys.__getitem__)
            else:
                index = 0
                for i in range(1, len(keys)):  # Python-level: the timers can stop it between comparisons
                    if better(keys[i], keys[index]):
                        index = i
            if best is _MISSING or better(keys[index], best_key):
                best, best_key = chunk[index], keys[index]
        if best is _MISSING:
            if default is _MISSING:
                raise ValueError(f"{builtin.__name__}() iterable argument is empty")
            return default
        return best

    extreme.__name__ = extreme.__qualname__ = builtin.__name__
    extreme.__doc__ = builtin.__doc__
    return extreme


checked_min = _extreme(min, lambda a, b: _compare("<", a, b))
checked_max = _extreme(max, lambda a, b: _compare(">", a, b))
