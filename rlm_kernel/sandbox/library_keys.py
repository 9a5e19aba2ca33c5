"""Stepped twins of the standard library's keyed methods written in Python: `install_keyed_twins` (Counter's
update, subtract, arithmetic, `del` and most_common; UserDict's writes and `|`; ChainMap's writes, len, iter,
fromkeys and `|`; difflib.SequenceMatcher's sequences).

The policy sends a cell's own `d[k]`, `d[k] = v`, `k in d` and `d.get(k)` through keys.py, which looks a
costly tuple key up in steps; library code is not rewritten. `Counter.update(mapping)` is `self[elem] =
count + self_get(elem, 0)`, `Counter.__add__` is `other[elem]` and `elem not in self`, `UserDict.__setitem__`
is `self.data[key] = item`, `ChainMap.__len__` is `len(set().union(*self.maps))`: each a C lookup that
compares two equal tuples made separately in one call (30 s and more for a 1 s limit), and Counter's
`count < other_count` and `most_common` compare counts (any value a cell stored) in C.

Each twin first reads the keys it will hand C at C speed (keys._has_costly: a type test for ints, texts and
short records): when none is costly, and the counts compared are cheap, the library's own method runs
unchanged; otherwise the same steps run with each key through keys.item_key / compare.checked_contains and
each count comparison through compare.checked_compare, so the results are the library's. They are
installed process-wide, as library_compare.py's twins are.
"""

from __future__ import annotations

import collections
import collections.abc
import difflib
import operator
from collections.abc import Callable, Iterable
from typing import Any

from rlm_kernel.sandbox.compare import _SCALARS, checked_compare, checked_contains
from rlm_kernel.sandbox.keys import _has_costly, insert_fromkeys, insert_keys, item_key, table_key
from rlm_kernel.sandbox.ordering import chunked_sort
from rlm_kernel.sandbox.stepped_stdlib import nlargest
from rlm_kernel.sandbox.weight import comparison_weight

__all__ = ["KEYED_TWIN_CODES", "install_keyed_twins"]

_Counter, _UserDict, _ChainMap = collections.Counter, collections.UserDict, collections.ChainMap
_C_WORK = 1 << 22  # count comparisons x weight one C sort or loop may do (compare._C_WORK)
_second = operator.itemgetter(1)


def _key(table: Any, key: Any) -> Any:
    """The key to hand C for `key` in `table` (keys.item_key; texts and ints as they are)."""
    kind = type(key)
    return key if kind is str or kind is int else item_key(table, key)


def _cheap_keys(*mappings: Any) -> bool:
    """No key of `mappings` (read through their own iteration) is a costly tuple or frozenset: their types
    read at C speed, and only tuples and frozensets weighed (keys._has_costly)."""
    costly: list[Any] = []
    for mapping in mappings:
        if not set(map(type, mapping)) <= _PLAIN_SCALARS:
            costly.extend(mapping)
    return not costly or not _has_costly(costly)


_PLAIN_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})
_NUMBERS = frozenset({int, bool, float})


def _cheap_counts(*counters: Any) -> bool:
    """The counts of `counters` compare cheaply in C (numbers, or values of compare.py's light weights)."""
    values: list[Any] = []
    for counter in counters:
        counts = dict.values(counter) if isinstance(counter, dict) else counter.values()
        if not set(map(type, counts)) <= _NUMBERS:
            values.extend(counts)
    if not values:
        return True
    weight = comparison_weight(values)
    return weight is not None and weight * len(values) <= _C_WORK


def _lt(a: Any, b: Any) -> Any:
    return a < b if type(a) in _SCALARS and type(b) in _SCALARS else checked_compare("<", a, b)


def _gt(a: Any, b: Any) -> Any:
    return a > b if type(a) in _SCALARS and type(b) in _SCALARS else checked_compare(">", a, b)


# --- Counter ---------------------------------------------------------------------------------------------


def _counter_update(self: Any, iterable: Any = None, /, **kwds: Any) -> None:
    if iterable is not None and isinstance(iterable, collections.abc.Mapping) and self:
        if _cheap_keys(iterable):
            _ORIGINAL["Counter.update"](self, iterable)
        else:
            self_get = self.get
            for elem, count in iterable.items():
                elem = _key(self, elem)
                self[elem] = count + self_get(elem, 0)
    elif iterable is not None:
        _ORIGINAL["Counter.update"](self, iterable)  # an empty counter's dict.update, or _count_elements
    if kwds:
        self.update(kwds)


def _counter_subtract(self: Any, iterable: Any = None, /, **kwds: Any) -> None:
    if iterable is not None:
        self_get = self.get
        if isinstance(iterable, collections.abc.Mapping):
            if _cheap_keys(iterable):
                _ORIGINAL["Counter.subtract"](self, iterable)
            else:
                for elem, count in iterable.items():
                    elem = _key(self, elem)
                    self[elem] = self_get(elem, 0) - count
        else:
            for elem in iterable:
                kind = type(elem)
                if kind is not str and kind is not int:
                    elem = item_key(self, elem)
                self[elem] = self_get(elem, 0) - 1
    if kwds:
        self.subtract(kwds)


def _counter_binary(name: str, both: bool, compares: bool) -> Callable[[Any, Any], Any]:
    """Counter.__add__/__sub__/__or__/__and__: the library's method when the keys of both counters (and,
    for `|` and `&`, their counts) are cheap, else the same loops in steps."""
    original = getattr(_Counter, name)
    combine: Callable[[Any, Any], Any] = {
        "__add__": lambda count, other_count: count + other_count,
        "__sub__": lambda count, other_count: count - other_count,
        "__or__": lambda count, other_count: other_count if _lt(count, other_count) else count,
        "__and__": lambda count, other_count: count if _lt(count, other_count) else other_count,
    }[name]

    def method(self: Any, other: Any) -> Any:
        if not isinstance(other, _Counter):
            return NotImplemented
        if _cheap_keys(self, other) and (not compares or _cheap_counts(self, other)):
            return original(self, other)
        result = _Counter()
        for elem, count in self.items():
            newcount = combine(count, other[_key(other, elem)])
            if newcount > 0:  # against an int: C's comparison is short whatever the count
                result[_key(result, elem)] = newcount
        if both:
            for elem, count in other.items():
                if not checked_contains(elem, self):
                    if name == "__sub__":
                        if count < 0:
                            result[_key(result, elem)] = 0 - count
                    elif count > 0:
                        result[_key(result, elem)] = count
        return result

    method.__name__ = method.__qualname__ = name
    return method


def _counter_unary(name: str) -> Callable[[Any], Any]:
    original = getattr(_Counter, name)

    def method(self: Any) -> Any:
        if _cheap_keys(self):
            return original(self)
        result = _Counter()
        for elem, count in self.items():
            if name == "__pos__" and count > 0:
                result[_key(result, elem)] = count
            elif name == "__neg__" and count < 0:
                result[_key(result, elem)] = 0 - count
        return result

    method.__name__ = method.__qualname__ = name
    return method


def _keep_positive(self: Any) -> Any:
    nonpositive = [elem for elem, count in self.items() if not count > 0]
    for elem in nonpositive:
        del self[elem]  # Counter.__delitem__: the twin below
    return self


def _counter_inplace(name: str) -> Callable[[Any, Any], Any]:
    """Counter.__iadd__/__isub__/__ior__/__iand__ (keys of `other` looked up in self, or of self in other)."""
    original = getattr(_Counter, name)

    def method(self: Any, other: Any) -> Any:
        cheap = _cheap_keys(other) if name != "__iand__" else _cheap_keys(self)
        if cheap and (name in ("__iadd__", "__isub__") or _cheap_counts(self, other)):
            return original(self, other)
        if name == "__iand__":
            for elem, count in self.items():
                other_count = other[_key(other, elem)]
                if _lt(other_count, count):
                    self[elem] = other_count  # elem is self's own key: met first by identity
        else:
            for elem, count in other.items():
                elem = _key(self, elem)
                if name == "__iadd__":
                    self[elem] = self[elem] + count
                elif name == "__isub__":
                    self[elem] = self[elem] - count
                elif _gt(count, self[elem]):
                    self[elem] = count
        return self._keep_positive()

    method.__name__ = method.__qualname__ = name
    return method


def _counter_delitem(self: Any, elem: Any) -> None:
    """Counter.__delitem__: like dict's, without KeyError for a missing key (the key looked up in steps)."""
    kind = type(elem)
    if kind is str or kind is int:
        if elem in self:
            dict.__delitem__(self, elem)
    elif checked_contains(elem, self):
        dict.__delitem__(self, item_key(self, elem))


def _most_common(self: Any, n: int | None = None) -> list[tuple[Any, Any]]:
    """Counter.most_common: counts ordered in steps when they are costly to compare (ordering.py)."""
    if _cheap_counts(self):
        return _ORIGINAL["Counter.most_common"](self, n)
    if n is None:
        return chunked_sort(list(self.items()), key=_second, reverse=True)
    return nlargest(n, self.items(), key=_second)


# --- UserDict --------------------------------------------------------------------------------------------


def _userdict_setitem(self: Any, key: Any, item: Any) -> None:
    kind = type(key)
    if kind is str or kind is int:
        self.data[key] = item
    else:
        data = self.data
        data[item_key(data, key)] = item


def _userdict_delitem(self: Any, key: Any) -> None:
    kind = type(key)
    if kind is str or kind is int:
        del self.data[key]
    else:
        data = self.data
        del data[item_key(data, key)]


def _merged(first: Any, second: Any) -> dict[Any, Any]:
    """`first | second` for two dicts (the keys of `second` inserted into a copy of `first` in steps)."""
    out = dict(first)
    for key, value in second.items():
        out[item_key(out, key)] = value
    return out


def _userdict_or(self: Any, other: Any) -> Any:
    if _cheap_keys(other.data if isinstance(other, _UserDict) else other if isinstance(other, dict) else ()):
        return _ORIGINAL["UserDict.__or__"](self, other)
    if isinstance(other, _UserDict):
        return self.__class__(_merged(self.data, other.data))
    if isinstance(other, dict):
        return self.__class__(_merged(self.data, other))
    return NotImplemented


def _userdict_ror(self: Any, other: Any) -> Any:
    if _cheap_keys(self.data):
        return _ORIGINAL["UserDict.__ror__"](self, other)
    if isinstance(other, _UserDict):
        return self.__class__(_merged(other.data, self.data))
    if isinstance(other, dict):
        return self.__class__(_merged(other, self.data))
    return NotImplemented


def _userdict_ior(self: Any, other: Any) -> Any:
    source = other.data if isinstance(other, _UserDict) else other
    if isinstance(source, dict) and _cheap_keys(source):
        return _ORIGINAL["UserDict.__ior__"](self, other)
    _mapping_update(self.data, source)
    return self


# --- ChainMap --------------------------------------------------------------------------------------------


def _chainmap_setitem(self: Any, key: Any, value: Any) -> None:
    first = self.maps[0]
    first[item_key(first, key)] = value


def _chainmap_delitem(self: Any, key: Any) -> None:
    first = self.maps[0]
    try:
        del first[item_key(first, key)]
    except KeyError:
        raise KeyError(f"Key not found in the first mapping: {key!r}")  # noqa: B904 - as the library


def _chainmap_pop(self: Any, key: Any, *args: Any) -> Any:
    first = self.maps[0]
    try:
        return first.pop(item_key(first, key), *args)
    except KeyError:
        raise KeyError(f"Key not found in the first mapping: {key!r}")  # noqa: B904 - as the library


def _chainmap_len(self: Any) -> int:
    if _cheap_keys(*self.maps):
        return len(set().union(*self.maps))
    keys: set[Any] = set()
    for mapping in self.maps:
        insert_keys(keys, list(mapping))
    return len(keys)


def _chainmap_iter(self: Any) -> Any:
    d: dict[Any, None] = {}
    for mapping in reversed(self.maps):
        insert_fromkeys(d, list(mapping), None)  # C's dict.fromkeys + update when no key is costly
    return iter(d)


def _chainmap_fromkeys(cls: Any, iterable: Iterable[Any], *args: Any) -> Any:
    if len(args) > 1:
        return cls(dict.fromkeys(iterable, *args))  # C's TypeError
    out: dict[Any, Any] = {}
    insert_fromkeys(out, list(iterable), args[0] if args else None)
    return cls(out)


def _chainmap_or(self: Any, other: Any) -> Any:
    if not isinstance(other, collections.abc.Mapping):
        return NotImplemented
    m = self.copy()
    _mapping_update(m.maps[0], other)
    return m


def _chainmap_ror(self: Any, other: Any) -> Any:
    if not isinstance(other, collections.abc.Mapping):
        return NotImplemented
    m = dict(other)
    for child in reversed(self.maps):
        _mapping_update(m, child)
    return self.__class__(m)


def _chainmap_ior(self: Any, other: Any) -> Any:
    _mapping_update(self.maps[0], other)
    return self


def _mapping_update(target: Any, other: Any) -> None:
    """`target.update(other)`: C's when `target` is a dict and no key of `other` is costly, else each key
    set through keys.item_key."""
    if isinstance(other, collections.abc.Mapping):
        if isinstance(target, dict) and isinstance(other, dict) and _cheap_keys(other):
            target.update(other)
            return
        pairs: Iterable[Any] = other.items()
    elif hasattr(other, "keys"):
        pairs = ((key, other[key]) for key in other.keys())
    else:
        pairs = other
    for key, value in pairs:
        target[item_key(target, key)] = value


# --- difflib.SequenceMatcher: its tables (b2j, the junk and popular sets) are dicts keyed by the elements --


def _canonical(matcher: Any, seq: Any) -> Any:
    """`seq` with each costly element replaced by the equal one seen first by this matcher (found through
    keys.table_key): C's lookups then compare identical objects. Texts and sequences of cheap items are
    kept as they are."""
    if isinstance(seq, (str, bytes)):
        return seq
    items = list(seq)
    if not items or not _has_costly(items):
        return seq
    seen = matcher.__dict__.setdefault("_rlm_seen", {})  # underscored: a cell cannot read it
    out = []
    for item in items:
        kind = type(item)
        if kind is tuple or kind is frozenset or issubclass(kind, tuple):
            item = table_key(seen, item, dict.__contains__)
            seen.setdefault(item)
        out.append(item)
    return out


def _set_seq1(self: Any, a: Any) -> None:
    _ORIGINAL["SequenceMatcher.set_seq1"](self, _canonical(self, a))


def _set_seq2(self: Any, b: Any) -> None:
    _ORIGINAL["SequenceMatcher.set_seq2"](self, _canonical(self, b))


_ORIGINAL: dict[str, Callable[..., Any]] = {
    "SequenceMatcher.set_seq1": difflib.SequenceMatcher.set_seq1,
    "SequenceMatcher.set_seq2": difflib.SequenceMatcher.set_seq2,
    "Counter.update": _Counter.update,
    "Counter.subtract": _Counter.subtract,
    "Counter.most_common": _Counter.most_common,
    "UserDict.__or__": _UserDict.__or__,
    "UserDict.__ror__": _UserDict.__ror__,
    "UserDict.__ior__": _UserDict.__ior__,
}

_TWINS: list[tuple[type, str, Any]] = [
    (_Counter, "update", _counter_update),
    (_Counter, "subtract", _counter_subtract),
    (_Counter, "__add__", _counter_binary("__add__", both=True, compares=False)),
    (_Counter, "__sub__", _counter_binary("__sub__", both=True, compares=False)),
    (_Counter, "__or__", _counter_binary("__or__", both=True, compares=True)),
    (_Counter, "__and__", _counter_binary("__and__", both=False, compares=True)),
    (_Counter, "__pos__", _counter_unary("__pos__")),
    (_Counter, "__neg__", _counter_unary("__neg__")),
    (_Counter, "_keep_positive", _keep_positive),
    *((_Counter, name, _counter_inplace(name)) for name in ("__iadd__", "__isub__", "__ior__", "__iand__")),
    (_Counter, "__delitem__", _counter_delitem),
    (_Counter, "most_common", _most_common),
    (_UserDict, "__setitem__", _userdict_setitem),
    (_UserDict, "__delitem__", _userdict_delitem),
    (_UserDict, "__or__", _userdict_or),
    (_UserDict, "__ror__", _userdict_ror),
    (_UserDict, "__ior__", _userdict_ior),
    (_ChainMap, "__setitem__", _chainmap_setitem),
    (_ChainMap, "__delitem__", _chainmap_delitem),
    (_ChainMap, "pop", _chainmap_pop),
    (_ChainMap, "__len__", _chainmap_len),
    (_ChainMap, "__iter__", _chainmap_iter),
    (_ChainMap, "fromkeys", classmethod(_chainmap_fromkeys)),
    (_ChainMap, "__or__", _chainmap_or),
    (_ChainMap, "__ror__", _chainmap_ror),
    (_ChainMap, "__ior__", _chainmap_ior),
    (difflib.SequenceMatcher, "set_seq1", _set_seq1),
    (difflib.SequenceMatcher, "set_seq2", _set_seq2),
]

KEYED_TWIN_CODES = frozenset(
    (twin.__func__ if isinstance(twin, classmethod) else twin).__code__ for _, _, twin in _TWINS
)


def install_keyed_twins() -> None:
    """Put the stepped twins in place of the library's methods (idempotent; process-wide)."""
    for owner, name, twin in _TWINS:
        if owner.__dict__.get(name) is not twin:
            original = owner.__dict__[name]  # KeyError: this Python's class no longer defines it here
            function = twin.__func__ if isinstance(twin, classmethod) else twin
            if not function.__doc__:
                function.__doc__ = getattr(original, "__doc__", None)
            setattr(owner, name, twin)
