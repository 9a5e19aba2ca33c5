"""Comparisons, searches and hashes of lists and tuples that the time limit can stop: `checked_compare`,
`checked_contains`, `SEARCH_METHODS` and `checked_hash`.

`[a] * 10**5 == [b] * 10**5` with two equal 10**7-character strings is one C loop of 10**5 memcmp calls (36 s;
`in`, `.count`, `.index`, `.remove`, `<` and `!=` alike), and a tuple nested with sharing (`t = (t,) * 10`
twelve times) hashes or compares 10**13 leaves. The cell's timers only raise between bytecodes, so these
run here in steps: a comparison of two plain scalars, or of lists whose items are all cheap to compare
(ordering.comparison_weight), stays one C call; otherwise the items are compared in chunks of `_CHUNK`, a
chunk in C when its items are cheap, else item by item in Python (recursing for nested lists), with the
identity shortcut CPython uses (`x is y` counts as equal), so results equal the builtins'.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from rlm_kernel.sandbox.errors import LimitExceeded
from rlm_kernel.sandbox.weight import comparison_weight

__all__ = [
    "COMPARE_GUARDS",
    "HASH_BUDGET",
    "SEARCH_METHODS",
    "checked_compare",
    "checked_contains",
    "checked_hash",
    "hash_work_check",
    "search_method",
]

_SCALARS = frozenset({int, float, str, bytes, bool, type(None), complex})
_SEQUENCES = (list, tuple)
_HASHED = frozenset({set, frozenset, dict})
_CHUNK = 1024  # items compared in one C call when they are cheap
_C_WORK = 1 << 22  # items x weight allowed in one C call (a few milliseconds of memcmp)
HASH_BUDGET = 1 << 22  # leaves one hash of a nested tuple may visit (~0.1 s in C)

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _cheap(left: list[Any] | tuple[Any, ...], right: list[Any] | tuple[Any, ...]) -> bool:
    """True if comparing `left` and `right` item by item in one C call stays short."""
    n = min(len(left), len(right))
    if n == 0:
        return True
    wl = comparison_weight(left if type(left) is list else list(left))
    if wl is not None and n * wl <= _C_WORK:
        return True  # one side's items are cheap: so is every pair (the cost is the smaller item's)
    wr = comparison_weight(right if type(right) is list else list(right))
    if wr is None:
        return False
    return n * (wr if wl is None else min(wl, wr)) <= _C_WORK


def _same(x: Any, y: Any) -> bool:
    """PyObject_RichCompareBool(x, y, Py_EQ): identity counts as equal. Deep nesting (the steps take about
    three Python frames a level where C takes one) finishes in C, as Python's own comparison would."""
    if x is y:
        return True
    try:
        return bool(checked_compare("==", x, y))
    except RecursionError:
        return bool(x == y)


def _first_difference(a: Any, b: Any) -> int:
    """The first index where a and b differ (by `_same`), or min(len) when none does."""
    n = min(len(a), len(b))
    for start in range(0, n, _CHUNK):
        ca, cb = a[start : start + _CHUNK], b[start : start + _CHUNK]
        if _cheap(ca, cb):
            if ca == cb:  # C: the chunks are cheap to compare (identity shortcut included)
                continue
            for i in range(len(ca)):
                x, y = ca[i], cb[i]
                if not (x is y or x == y):
                    return start + i
            continue  # pragma: no cover - == found a difference, so a pair differs
        for i in range(min(len(ca), len(cb))):
            if not _same(ca[i], cb[i]):
                return start + i
    return n


_DUNDERS = {"==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}


def _base(kind: type, op: str) -> type | None:
    """list, tuple or dict when `kind` is one of them, or a subclass (a cell's `class L(list)`) that does
    not define the comparison `op` itself (so the base's C comparison is what would run), else None. Read
    from the classes' own `__dict__` only: no attribute lookup that could run a cell's code."""
    for base in (list, tuple, dict):
        if kind is base:
            return base
        if issubclass(kind, base):
            name = _DUNDERS[op]
            for cls in kind.__mro__:
                if cls is base:
                    return base
                if name in type.__dict__["__dict__"].__get__(cls):
                    return None
    return None


def _dicts_equal(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    """`a == b` for dicts, in steps when the values are costly to compare: the keys are matched in C
    (hashes are stored; a costly tuple key is refused by its hash budget), the values one by one."""
    if dict.__len__(a) != dict.__len__(b):  # the stored sizes: a subclass's own __len__ is not the dict's
        return False
    values = list(dict.values(a))
    weight = comparison_weight(values)
    if weight is not None and len(values) * weight <= _C_WORK:
        return dict.__eq__(a, b) is True
    other = dict.get
    missing = object()
    for key, value in dict.items(a):
        if type(key) is tuple:
            hash_work_check(key)
        theirs = other(b, key, missing)
        if theirs is missing or not _same(value, theirs):
            return False
    return True


def checked_compare(op: str, a: Any, b: Any) -> Any:
    """`a <op> b` (==, !=, <, <=, >, >=) with the same result, in steps when a and b are lists, tuples or
    dicts of one type (or a subclass that keeps the base's comparison) whose items are costly to compare
    (see the module docstring)."""
    ta, tb = type(a), type(b)
    if ta in _SCALARS or tb in _SCALARS or ta is not tb or a is b:
        return _OPS[op](a, b)
    base = _base(ta, op)
    if base is None:
        return _OPS[op](a, b)
    if base is dict:
        if op not in ("==", "!="):
            return _OPS[op](a, b)  # dicts are not ordered: the TypeError comes at once
        return _dicts_equal(a, b) is (op == "==")
    if ta is not base:  # a subclass: compare as the base does, on its stored items (no __iter__ of it runs)
        whole = slice(None)
        a, b = (
            (list.copy(a), list.copy(b))
            if base is list
            else (tuple.__getitem__(a, whole), tuple.__getitem__(b, whole))
        )
    if op in ("==", "!=") and len(a) != len(b):
        return op == "!="
    if _cheap(a, b):
        return _OPS[op](a, b)
    i = _first_difference(a, b)
    if i >= min(len(a), len(b)):
        return _OPS[op](len(a), len(b))
    if op == "==":
        return False
    if op == "!=":
        return True
    return checked_compare(op, a[i], b[i])


def _small(value: Any) -> bool:
    """A scalar every comparison with is cheap whatever the other item (texts compare lengths first)."""
    kind = type(value)
    if kind in (str, bytes):
        return len(value) <= 64
    return kind in _SCALARS and (kind is not int or value.bit_length() <= 4096)


def _index_of(seq: Any, value: Any, start: int = 0, stop: int | None = None) -> int:
    """The first index in seq[start:stop] whose item equals value (item on the left, as CPython), or -1."""
    n = len(seq)
    stop = n if stop is None else stop
    if _small(value):
        try:
            return seq.index(value, start, stop)  # C: every comparison is cheap
        except ValueError:
            return -1
    w = comparison_weight([value])
    for begin in range(start, stop, _CHUNK):
        end = min(begin + _CHUNK, stop)
        chunk = seq[begin:end]
        if type(chunk) is not list:
            chunk = list(chunk)
        cw = comparison_weight(chunk)
        if w is not None and cw is not None and len(chunk) * min(w, cw) <= _C_WORK:
            if value in chunk:  # C, cheap
                return begin + chunk.index(value)
            continue
        for i, item in enumerate(chunk):
            if item is value or bool(checked_compare("==", item, value)):
                return begin + i
    return -1


def _bounds(n: int, start: Any, stop: Any) -> tuple[int, int]:
    start, stop, _ = slice(start, stop).indices(n)
    return start, stop


def checked_contains(value: Any, container: Any) -> bool:
    """`value in container`, in steps for lists and tuples (the other containers answer themselves)."""
    kind = type(container)
    if kind not in _SEQUENCES:
        if type(value) is tuple and kind in _HASHED:
            hash_work_check(value)
        return value in container
    if _small(value):
        return value in container
    return _index_of(container, value) >= 0


def _count(seq: Any) -> Callable[[Any], int]:
    def count(value: Any, /) -> int:
        if _small(value):
            return seq.count(value)  # C: every comparison is cheap
        total = 0
        n = len(seq)
        i = 0
        while i < n:
            found = _index_of(seq, value, i)
            if found < 0:
                break
            total += 1
            i = found + 1
        return total

    return count


def _index(seq: Any) -> Callable[..., int]:
    def index(value: Any, start: Any = 0, stop: Any = None, /) -> int:
        begin, end = _bounds(len(seq), operator.index(start), None if stop is None else operator.index(stop))
        found = _index_of(seq, value, begin, max(begin, end))
        if found < 0:
            raise ValueError(
                f"{value!r} is not in {type(seq).__name__}"
                if type(seq) is list
                else "tuple.index(x): x not in tuple"
            )
        return found

    return index


def _remove(seq: list[Any]) -> Callable[[Any], None]:
    def remove(value: Any, /) -> None:
        found = _index_of(seq, value)
        if found < 0:
            raise ValueError("list.remove(x): x not in list")
        del seq[found]

    return remove


SEARCH_METHODS = frozenset({"count", "index", "remove"})


def search_method(obj: Any, name: str) -> Callable[..., Any] | None:
    """The stoppable `count`/`index`/`remove` of an exact list or tuple, else None (the real method)."""
    kind = type(obj)
    if kind is list:
        if name == "remove":
            return _remove(obj)
    elif kind is not tuple:
        return None
    if name == "count":
        return _count(obj)
    if name == "index":
        return _index(obj)
    return None


def hash_work_check(value: Any, budget: int = HASH_BUDGET) -> None:
    """Raise LimitExceeded when hashing (or comparing) `value` would visit more than `budget` leaves: a
    tuple nested with sharing (`t = (t,) * 10` twelve times) costs 10**13 in one C call. The walk counts
    each distinct tuple once (memo by id) and stops past the budget, so it is cheap."""
    if type(value) is not tuple:
        return
    kinds = set(map(type, value))
    if tuple not in kinds:
        return
    memo: dict[int, int] = {}

    def work(t: tuple[Any, ...]) -> int:
        known = memo.get(id(t))
        if known is not None:
            return known
        total = len(t) + 1
        for item in t:
            if type(item) is tuple:
                total += work(item)
                if total > budget:
                    break
        memo[id(t)] = total
        return total

    if work(value) > budget:
        raise LimitExceeded(
            "hashing this tuple would visit more than "
            f"{budget} items: it nests the same tuples many times over (like t = (t,) * 10 repeated), and "
            "one hash of it cannot be stopped; use a flat tuple, or key by id() or a string"
        )


def checked_hash(value: Any, /) -> int:
    """`hash(value)`, refusing tuples nested with sharing whose hash would visit too many items."""
    hash_work_check(value)
    return hash(value)


def _guard(op: str) -> Callable[[Any, Any], Any]:
    real = _OPS[op]

    def compare(a: Any, b: Any) -> Any:
        ta = type(a)
        if ta in _SCALARS or type(b) in _SCALARS:
            return real(a, b)
        return checked_compare(op, a, b)

    compare.__name__ = f"compare_{real.__name__}"
    return compare


def _not_in(value: Any, container: Any) -> bool:
    return not checked_contains(value, container)


# The names policy.visit_Compare calls for each operator.
COMPARE_GUARDS: dict[str, Callable[[Any, Any], Any]] = {
    "_eq_": _guard("=="),
    "_ne_": _guard("!="),
    "_lt_": _guard("<"),
    "_le_": _guard("<="),
    "_gt_": _guard(">"),
    "_ge_": _guard(">="),
    "_in_": checked_contains,
    "_not_in_": _not_in,
}
