"""Set algebra the time limit can stop: `&`, `|`, `-`, `^` between sets, frozensets and dict views (and their
in-place forms), `d | e` and `d |= e` for dicts, and the set methods that take other iterables.

Each of these is one C call that inserts or looks up every item of one operand in the other: tuples equal but
made separately cost a minute per hash match (`{(a,) * 10**5} & {(b,) * 10**5}`), and ints that share one hash
make it quadratic. The guards test the exact type of the left operand first (an int or float takes the
plain operator: no call beyond the guard's own, and the policy inlines that test for names), then run the
operation in C when the operands weigh little — the product of their sizes within `_C_PAIRS` and no costly
tuple on the side whose items bound each comparison — and otherwise in steps: chunks in C sized by
bulk.feed's timing for cheap items, item by item through keys.py's probe for costly ones. Results equal
the builtins'; the result's class is the one C gives (found by running the operator on empty stand-ins,
which also raises C's own TypeError).
"""

from __future__ import annotations

import collections
import itertools
import operator
from collections.abc import Callable, Iterable
from typing import Any

from rlm_kernel.sandbox.bulk import feed
from rlm_kernel.sandbox.compare import checked_contains
from rlm_kernel.sandbox.keys import _has_costly, insert_keys, insert_pairs, item_key

__all__ = ["SET_GUARDS", "SET_METHODS", "inplace", "set_method"]

_C_PAIRS = 1 << 24  # item pairs one C call may compare in the worst case (keys sharing one hash: ~0.3 s)
_KEYS, _ITEMS, _VALUES = type({}.keys()), type({}.items()), type({}.values())
_VIEWS = (_KEYS, _ITEMS)
_REAL = {"&": operator.and_, "|": operator.or_, "-": operator.sub, "^": operator.xor}


def _set_like(x: Any) -> bool:
    kind = type(x)
    return (
        kind is set or kind is frozenset or kind is _KEYS or kind is _ITEMS or isinstance(x, (set, frozenset))
    )


def _uses_c(x: Any, name: str) -> bool:
    """x's class keeps set's/frozenset's/dict's C method `name` (a cell's `class S(set)` that defines it runs
    its own code); defaultdict's and OrderedDict's own `|` and `|=` count as C (a copy, then an update)."""
    kind = type(x)
    if kind is set or kind is frozenset or kind in _VIEWS or kind is dict:
        return True
    base = set if isinstance(x, set) else frozenset if isinstance(x, frozenset) else dict
    method = getattr(kind, name, None)
    return method is getattr(base, name, None) or (base is dict and method in _DICT_SUBCLASS_OR)


_DICT_SUBCLASS_OR = frozenset(
    getattr(kind, name)
    for kind in (collections.defaultdict, collections.OrderedDict)
    for name in ("__or__", "__ior__")
)


def _empty(x: Any) -> Any:
    """A stand-in of x's kind with no items (the operator on stand-ins gives C's result class, or its
    TypeError)."""
    if isinstance(x, frozenset):
        return frozenset()
    if isinstance(x, set):
        return set()
    kind = type(x)
    if kind is _KEYS:
        return {}.keys()
    if kind is _ITEMS:
        return {}.items()
    if isinstance(x, dict):
        return {}
    return []


def _size(x: Any) -> int | None:
    if isinstance(x, set):
        return set.__len__(x)
    if isinstance(x, frozenset):
        return frozenset.__len__(x)
    if isinstance(x, dict):
        return dict.__len__(x)
    kind = type(x)
    if kind in _VIEWS or kind is list or kind is tuple:
        return len(x)
    return None


def _items(x: Any) -> list[Any]:
    return list(x) if type(x) is not list else x


def _costly(x: Any) -> bool:
    """Some item of x is a costly key (a tuple or frozenset whose comparison with an equal one is long); the
    item types are read first at C speed (a set of ints or texts needs nothing more)."""
    if type(x) is _ITEMS:
        return True  # pairs: the values are compared after a key matches (checked_contains steps them)
    kinds = set(map(type, x))
    if tuple not in kinds and frozenset not in kinds and not any(issubclass(k, tuple) for k in kinds):
        return False
    return _has_costly(_items(x))


def _cheap(a: Any, b: Any) -> bool:
    """`a <op> b` is short in C: both sized, `(na + nb) * max(na, nb)` within `_C_PAIRS` (the comparisons
    when every key shares one hash: each item looked up in, or inserted into, a table of up to na + nb), and
    no costly item on the smaller side (each comparison is between an item of each side, or two of the
    inserted side's, bounded by either's weight)."""
    na, nb = _size(a), _size(b)
    if na is None or nb is None or (na + nb) * max(na, nb) > _C_PAIRS:
        return False
    return not _costly(a if na <= nb else b)


def _pairs_ok(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    na, nb = dict.__len__(a), dict.__len__(b)
    return (na + nb) * max(na, nb) <= _C_PAIRS


def _member(table: Any, keyed: bool) -> Callable[[Any], bool]:
    if keyed or type(table) is _ITEMS:
        return lambda x: checked_contains(x, table)
    return table.__contains__


def _as_table(x: Any, keyed: bool) -> Any:
    """x as something `in` answers by hashing: sets, frozensets and views as they are, else a set built in
    steps."""
    if _set_like(x):
        return x
    out: set[Any] = set()
    _add_all(out, x, keyed)
    return out


def _add_all(out: set[Any], items: Iterable[Any], keyed: bool) -> None:
    if keyed:
        feed(lambda chunk: insert_keys(out, chunk), items)
    else:
        feed(out.update, items)


def _copy(x: Any, keyed: bool) -> set[Any]:
    if isinstance(x, set):
        return set.copy(x)  # a copy of the table: no comparisons
    if isinstance(x, frozenset):
        return set(frozenset.__iter__(x)) if type(x) is not frozenset else set(x)
    out: set[Any] = set()
    _add_all(out, x, keyed)
    return out


def _discard_all(out: set[Any], items: Iterable[Any], keyed: bool) -> None:
    if not keyed:
        feed(out.difference_update, items)
        return
    for x in items:
        out.discard(item_key(out, x))


def _toggle_all(out: set[Any], items: Iterable[Any], keyed: bool) -> None:
    if not keyed:
        feed(out.symmetric_difference_update, items)
        return
    for x in items:
        key = item_key(out, x)
        if key in out:
            out.discard(key)
        else:
            out.add(key)


def _filtered(source: Iterable[Any], keep: Callable[[Any], bool], keyed: bool, invert: bool) -> set[Any]:
    out: set[Any] = set()
    pick = itertools.filterfalse if invert else filter

    def step(chunk: list[Any]) -> None:
        if keyed:
            insert_keys(out, list(pick(keep, chunk)))
        else:
            out.update(pick(keep, chunk))

    feed(step, source)
    return out


def _and(a: Any, b: Any, keyed: bool) -> set[Any]:
    """Items of the iterated side that the other holds (C iterates the smaller set, `b` on a tie; a view's
    `&` iterates the other operand)."""
    if _set_like(a) and _set_like(b):
        na, nb = _size(a), _size(b)
        first, other = (b, a) if nb <= na else (a, b)
    elif _set_like(a):
        first, other = b, a
    else:
        first, other = a, b
    return _filtered(first, _member(other, keyed), keyed, invert=False)


def _sub(a: Any, b: Any, keyed: bool) -> set[Any]:
    table = _as_table(b, keyed)
    na, nb = _size(a), _size(table)
    if isinstance(a, (set, frozenset)) and na is not None and nb is not None and (na >> 2) > nb:
        out = _copy(a, keyed)
        _discard_all(out, table, keyed)
        return out
    return _filtered(a, _member(table, keyed), keyed, invert=True)


def _or(a: Any, b: Any, keyed: bool) -> set[Any]:
    out = _copy(a, keyed)
    _add_all(out, b, keyed)
    return out


def _xor(a: Any, b: Any, keyed: bool) -> set[Any]:
    out = _copy(b, keyed)
    _toggle_all(out, a if isinstance(a, (set, frozenset)) else _as_table(a, keyed), keyed)
    return out


_STEPPED = {"&": _and, "|": _or, "-": _sub, "^": _xor}
_DUNDER = {"&": "__and__", "|": "__or__", "-": "__sub__", "^": "__xor__"}


def _dict_or(a: dict[Any, Any], b: Any) -> Any:
    """`a | b` for dicts: a copy of a, then b's pairs inserted as keys.py inserts them."""
    pairs = b.items() if type(b) is dict else ((k, b[k]) for k in b.keys())
    if isinstance(a, (collections.defaultdict, collections.OrderedDict)):
        result = operator.or_(a, {})  # C's copy in a's class (the factory, the order), then b's pairs
        feed(lambda chunk: insert_pairs(result, chunk), pairs)
        return result
    merged = dict.copy(a)  # a copy of the table: no comparisons
    feed(lambda chunk: insert_pairs(merged, chunk), pairs)
    if type(a) is dict:
        return merged
    result = operator.or_(a, {})  # a copy of a in its own class (defaultdict keeps its factory)
    result.clear()
    result.update(merged)
    return result


def binop(op: str, a: Any, b: Any) -> Any:
    """`a <op> b` for `&`, `|`, `-`, `^` (see the module docstring)."""
    real = _REAL[op]
    ta = type(a)
    if ta is int or ta is float or ta is bool:
        return real(a, b)
    if op == "|" and isinstance(a, dict) and isinstance(b, dict) and _uses_c(a, "__or__"):
        if _pairs_ok(a, b) and not _has_costly(list(dict.keys(b if len(b) <= len(a) else a))):
            return real(a, b)
        return _dict_or(a, b)
    if not (_set_like(a) or _set_like(b)):
        return real(a, b)
    if _set_like(a) and not _uses_c(a, _DUNDER[op]):
        return real(a, b)  # a class of the cell's own
    if _set_like(b) and not _set_like(a) and not _uses_c(b, _DUNDER[op]):
        return real(a, b)
    if _cheap(a, b):
        return real(a, b)
    shape = real(_empty(a), _empty(b))  # C's TypeError, or the result's class
    keyed = _costly(a) or _costly(b)
    out = _STEPPED[op](a, b, keyed)
    return out if type(shape) is set else frozenset(out)


def _guard(op: str) -> Callable[[Any, Any], Any]:
    real = _REAL[op]

    def guard(a: Any, b: Any, /) -> Any:
        ta = type(a)
        if ta is int or ta is float or ta is bool:
            return real(a, b)
        return binop(op, a, b)

    guard.__name__ = guard.__qualname__ = f"stepped_{real.__name__}"
    return guard


# The names policy._guarded_binop emits for `-`, `|`, `&`, `^` between non-constant operands.
SET_GUARDS: dict[str, Callable[[Any, Any], Any]] = {
    "_sub_": _guard("-"),
    "_bitor_": _guard("|"),
    "_bitand_": _guard("&"),
    "_bitxor_": _guard("^"),
}
_INPLACE = {"|=": "|", "&=": "&", "-=": "-", "^=": "^"}


def inplace(op: str, x: Any, y: Any) -> Any:
    """`x op= y` for `|=`, `&=`, `-=`, `^=` (guards.inplacevar): sets change in place in steps, dicts merge
    (`d |= e`) in steps, everything else as Python does."""
    sym = _INPLACE[op]
    ireal = _IREAL[sym]
    if isinstance(x, set) and _uses_c(x, _IDUNDER[sym]):
        if not isinstance(y, (set, frozenset)) or _cheap(x, y):
            return ireal(x, y)  # C's TypeError, or a short C call
        if y is x:
            if sym in "-^":
                set.clear(x)
            return x
        keyed = _costly(x) or _costly(y)
        if sym == "|":
            _add_all(x, y, keyed)
        elif sym == "-":
            _discard_all(x, y, keyed)
        elif sym == "^":
            _toggle_all(x, y, keyed)
        else:
            kept = _and(x, y, keyed)
            set.clear(x)
            set.update(x, kept)  # into an empty set: a copy of the table
        return x
    if sym == "|" and isinstance(x, dict) and _uses_c(x, "__ior__") and hasattr(type(y), "keys"):
        if isinstance(y, dict) and _pairs_ok(x, y) and not _has_costly(list(dict.keys(y))):
            return ireal(x, y)
        pairs = y.items() if type(y) is dict else ((k, y[k]) for k in y.keys())
        feed(lambda chunk: insert_pairs(x, chunk), pairs)
        return x
    if isinstance(x, frozenset) or type(x) in _VIEWS:
        return binop(sym, x, y)  # no in-place form: `x = x op y`
    return ireal(x, y)


_IREAL = {"&": operator.iand, "|": operator.ior, "-": operator.isub, "^": operator.ixor}
_IDUNDER = {"&": "__iand__", "|": "__ior__", "-": "__isub__", "^": "__ixor__"}


# -- methods -------------------------------------------------------------------------------------------------
def _method_set(x: Any, keyed: bool) -> Any:
    return x if isinstance(x, (set, frozenset)) else _as_table(x, keyed)


def set_method(obj: Any, name: str) -> Callable[..., Any] | None:
    """The stepped `intersection`, `difference`, `union`, `symmetric_difference`, their `_update` forms,
    `update`, `issubset`, `issuperset` and `isdisjoint` of a set or frozenset `obj` (exact, or a subclass
    keeping the method), else None. They run the C method when the operands weigh little (`_cheap`), else
    item by item through keys.py's probe."""
    if name == "isdisjoint" and isinstance(obj, _VIEWS):
        return _view_isdisjoint(obj)
    if name not in SET_METHODS or not isinstance(obj, (set, frozenset)) or not _uses_c(obj, name):
        return None
    real = getattr(set if isinstance(obj, set) else frozenset, name).__get__(obj)
    wrap: Callable[[set[Any]], Any] = (lambda s: s) if isinstance(obj, set) else frozenset
    if name in _ALGEBRA:
        step = _ALGEBRA[name]

        def many(*others: Any) -> Any:
            if all(_cheap(obj, other) for other in others):
                return real(*others)
            out: Any = obj
            for other in others:
                out = step(out, other, True)
            return wrap(out) if out is not obj else wrap(_copy(obj, True))

        return many
    if name in _UPDATES:
        sym = _UPDATES[name]

        def update(*others: Any) -> None:
            if name == "symmetric_difference_update" and len(others) != 1:
                return real(*others)  # C's TypeError
            for other in others:
                if _cheap(obj, other):
                    real(other)
                else:
                    inplace(
                        sym, obj, other if isinstance(other, (set, frozenset)) else _as_table(other, True)
                    )
            return None

        return update
    tests = {"issubset": _issubset, "issuperset": _issuperset, "isdisjoint": _isdisjoint}[name]

    def test(other: Any, /) -> bool:
        if _cheap(obj, other):
            return bool(real(other))
        return tests(obj, other)

    return test


def _view_isdisjoint(view: Any) -> Callable[[Any], bool]:
    """`d.keys().isdisjoint(other)`, `d.items().isdisjoint(other)`: each item looked up in steps."""
    real = view.isdisjoint

    def isdisjoint(other: Any, /) -> bool:
        if _cheap(view, other):
            return bool(real(other))
        return _isdisjoint(view, other)

    return isdisjoint


def _issubset(obj: Any, other: Any) -> bool:
    table = _as_table(other, True)
    if len(obj) > len(table):
        return False
    return all(map(_member(table, True), obj))


def _issuperset(obj: Any, other: Any) -> bool:
    return all(map(_member(obj, True), other))


def _isdisjoint(obj: Any, other: Any) -> bool:
    if isinstance(other, (set, frozenset)) and len(other) > len(obj):
        return not any(map(_member(other, True), obj))
    return not any(map(_member(obj, True), other))


_ALGEBRA: dict[str, Callable[[Any, Any, bool], set[Any]]] = {
    "intersection": _and,
    "difference": _sub,
    "union": _or,
    "symmetric_difference": _xor,
}
_UPDATES = {
    "intersection_update": "&=",
    "difference_update": "-=",
    "symmetric_difference_update": "^=",
    "update": "|=",
}


SET_METHODS = frozenset(
    {
        "intersection",
        "difference",
        "union",
        "symmetric_difference",
        "intersection_update",
        "difference_update",
        "symmetric_difference_update",
        "update",
        "issubset",
        "issuperset",
        "isdisjoint",
    }
)
