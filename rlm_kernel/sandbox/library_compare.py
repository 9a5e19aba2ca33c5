"""Stepped twins of the standard library's comparison methods written in Python: `install_library_twins`
(UserList, the Mapping/Sequence/view mixins, UserDict, ChainMap, Counter) and `step_dataclass_methods`.

The policy rewrites a cell's own `==`, `<` and `in` into the stepped guards of compare.py, but library code
is not rewritten: `UserList.__eq__` is `self.data == other.data`, `Mapping.__eq__` is
`dict(self.items()) == dict(other.items())`, `Sequence.__contains__` compares item by item with a plain
`==`, and a dataclass's generated `__eq__` compares two tuples of fields. Each of those is one C call whose
cost a count of items does not see (`UserList([a] * 10**4) == UserList([b] * 10**4)` over two distinct
10**7-item lists compares for minutes, and only the CPU backstop, which restarts the kernel, stopped it).

The twins do what the library's methods do, with each comparison through `checked_compare` /
`checked_contains` / the stepped search methods, so the results are the library's and the time limit can
stop them. They are installed process-wide, as safe_stdlib's Counter chunks are: the kernel's own uses get
the same results, and cells reach the real classes only through the facades.
"""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
from collections.abc import Callable
from typing import Any

from rlm_kernel.sandbox.compare import (
    _inherited,
    base_compare,
    checked_compare,
    checked_contains,
    checked_hash,
    search_method,
)
from rlm_kernel.sandbox.keys import item_key

__all__ = ["install_library_twins", "step_dataclass_methods"]

_DICTS = (dict, collections.OrderedDict)
_ORDER = {"__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">="}
_EQ_ORDER = {"__eq__": "==", **_ORDER}


def _equal(a: Any, b: Any) -> Any:
    """`a == b` with a and b's identity shortcut, as the library's `v is value or v == value` does."""
    return a is b or checked_compare("==", a, b)


# --- UserList: every method that hands the work to the wrapped list's C comparison ---------------------


def _userlist_data(other: Any) -> Any:
    return other.data if isinstance(other, collections.UserList) else other


def _userlist_compare(name: str, op: str) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        return checked_compare(op, self.data, _userlist_data(other))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"UserList.{name}, compared in steps (library_compare.py)."
    return method


def _userlist_contains(self: Any, item: Any) -> bool:
    return checked_contains(item, self.data)


def _userlist_search(name: str) -> Callable[..., Any]:
    def method(self: Any, item: Any, *args: Any) -> Any:
        stepped = search_method(self.data, name)
        return (stepped or getattr(self.data, name))(item, *args)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"UserList.{name}, searched in steps (library_compare.py)."
    return method


# --- the collections.abc mixins --------------------------------------------------------------------------


def _mapping_eq(self: Any, other: Any) -> Any:
    if not isinstance(other, collections.abc.Mapping):
        return NotImplemented
    return checked_compare("==", dict(self.items()), dict(other.items()))


def _sequence_contains(self: Any, value: Any) -> bool:
    return any(_equal(v, value) for v in self)


def _sequence_index(self: Any, value: Any, start: int = 0, stop: int | None = None) -> int:
    if start is not None and start < 0:
        start = max(len(self) + start, 0)
    if stop is not None and stop < 0:
        stop += len(self)
    i = start
    while stop is None or i < stop:
        try:
            v = self[i]
        except IndexError:
            break
        if _equal(v, value):
            return i
        i += 1
    raise ValueError


def _sequence_count(self: Any, value: Any) -> int:
    return sum(1 for v in self if _equal(v, value))


def _values_contains(self: Any, value: Any) -> bool:
    mapping = self._mapping
    return any(_equal(mapping[key], value) for key in mapping)


def _items_contains(self: Any, item: Any) -> bool:
    key, value = item
    try:
        v = self._mapping[key]
    except KeyError:
        return False
    return bool(_equal(v, value))


def _in_data(self: Any, key: Any) -> bool:
    return checked_contains(key, self.data)


def _chainmap_contains(self: Any, key: Any) -> bool:
    return any(checked_contains(key, m) for m in self.maps)


def _userdict_getitem(self: Any, key: Any) -> Any:
    """UserDict.__getitem__, a costly tuple key looked up in steps (keys.item_key)."""
    data = self.data
    if checked_contains(key, data):
        return data[item_key(data, key)]
    if hasattr(self.__class__, "__missing__"):
        return self.__class__.__missing__(self, key)
    raise KeyError(key)


def _chainmap_getitem(self: Any, key: Any) -> Any:
    """ChainMap.__getitem__, a costly tuple key looked up in steps (keys.item_key)."""
    for mapping in self.maps:
        try:
            return mapping[item_key(mapping, key)]
        except KeyError:
            pass
    return self.__missing__(key)


# --- Counter: counts are compared one by one (a count may be any value a cell stored) -------------------


def _counter_all(op: str) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        if not isinstance(other, collections.Counter):
            if op == "==" and isinstance(other, dict) and _inherited(type(other), "__eq__") in _DICTS:
                # Python's next step: the dict's own C comparison, reflected (in steps here)
                return base_compare("==", dict, other, self)
            return NotImplemented
        return all(
            checked_compare(op, self[_key(self, e)], other[_key(other, e)]) for c in (self, other) for e in c
        )

    return method


def _key(table: Any, key: Any) -> Any:
    """The key to hand C for `key` in `table` (keys.item_key: a costly tuple looked up in steps)."""
    kind = type(key)
    return key if kind is str or kind is int else item_key(table, key)


_TWINS: list[tuple[type, str, Callable[..., Any]]] = [
    *((collections.UserList, name, _userlist_compare(name, op)) for name, op in _EQ_ORDER.items()),
    (collections.UserList, "__contains__", _userlist_contains),
    *((collections.UserList, name, _userlist_search(name)) for name in ("count", "index", "remove")),
    (collections.abc.Mapping, "__eq__", _mapping_eq),
    (collections.abc.Sequence, "__contains__", _sequence_contains),
    (collections.abc.Sequence, "index", _sequence_index),
    (collections.abc.Sequence, "count", _sequence_count),
    (collections.abc.ValuesView, "__contains__", _values_contains),
    (collections.abc.ItemsView, "__contains__", _items_contains),
    (collections.UserDict, "__contains__", _in_data),
    (collections.ChainMap, "__contains__", _chainmap_contains),
    (collections.UserDict, "__getitem__", _userdict_getitem),
    (collections.ChainMap, "__getitem__", _chainmap_getitem),
    (collections.Counter, "__eq__", _counter_all("==")),
    (collections.Counter, "__le__", _counter_all("<=")),
    (collections.Counter, "__ge__", _counter_all(">=")),
]

TWIN_CODES = frozenset(f.__code__ for _, _, f in _TWINS)


def install_library_twins() -> None:
    """Put the stepped twins in place of the library's methods (idempotent; process-wide)."""
    for owner, name, twin in _TWINS:
        if owner.__dict__.get(name) is not twin:
            original = owner.__dict__[name]  # KeyError: this Python's class no longer defines it here
            twin.__doc__ = twin.__doc__ or original.__doc__
            setattr(owner, name, twin)


# --- dataclasses: the generated comparisons and hash ------------------------------------------------------


def _field_names(cls: type, *, for_hash: bool = False) -> tuple[str, ...]:
    """The fields the generated methods compare (or hash: a field's `hash` overrides its `compare`)."""
    fields = dataclasses.fields(cls)
    if for_hash:
        return tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    return tuple(f.name for f in fields if f.compare)


def _dataclass_compare(op: str, names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            mine = tuple(getattr(self, n) for n in names)
            return checked_compare(op, mine, tuple(getattr(other, n) for n in names))
        return NotImplemented

    return method


def _dataclass_hash(names: tuple[str, ...]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return checked_hash(tuple(getattr(self, n) for n in names))

    return __hash__


def step_dataclass_methods(cls: type, defined: frozenset[str]) -> type:
    """Replace the comparison methods and `__hash__` that `dataclasses.dataclass` generated for `cls` (the
    names not in `defined`, the class's own before decoration) by stepped twins with the same semantics."""
    names = _field_names(cls)
    for name, op in _EQ_ORDER.items():
        if name in cls.__dict__ and name not in defined:
            twin = _dataclass_compare(op, names)
            twin.__name__ = name
            twin.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, twin)
    generated_hash = cls.__dict__.get("__hash__")
    if "__hash__" not in defined and callable(generated_hash):
        twin_hash = _dataclass_hash(_field_names(cls, for_hash=True))
        twin_hash.__qualname__ = f"{cls.__qualname__}.__hash__"
        cls.__hash__ = twin_hash  # type: ignore[method-assign]
    return cls


DATACLASS_CODES = frozenset(
    {
        _dataclass_compare("==", ()).__code__,
        _dataclass_hash(()).__code__,
    }
)
