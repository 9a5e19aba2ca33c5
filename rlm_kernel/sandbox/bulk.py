"""Hashed containers built in steps the time limit can stop: the `set`, `frozenset` and `dict` cells see.

`set(range(10**8))`, `frozenset(...)`, `dict.fromkeys(range(10**8))` and `dict(zip(a, b))` are one C loop
each (seconds to minutes; the CPU limit cannot stop them), and so is building a set of integers that share
one hash value (`k * (2**61 - 1)`: every insertion walks all the others, so 60 000 of them ran for minutes).
The classes here are subclasses of the real ones whose metaclass builds the real object in chunks — the
chunk shrinks when one takes long (down to a single item, so one C call costs at most one insertion) and
grows again when they are quick — with the time limit checked between chunks. `isinstance(x, set)`,
`type(x) is set` (builtins.SafeType maps the real class), `set[int]`, `class S(set)` (it subclasses the real
class, as `int` does) and `dict.fromkeys` behave as with the real classes; every call returns a real object.
"""

from __future__ import annotations

import collections
import itertools
import operator
import time
from collections.abc import Callable, Iterable
from typing import Any

from rlm_kernel.sandbox.compare import hash_work_check
from rlm_kernel.sandbox.keys import insert_fromkeys, insert_keys, insert_pairs, short_records

__all__ = [
    "BULK_CLASSES",
    "CHECKED_NAMES",
    "CappedDict",
    "CappedFrozenset",
    "CappedSet",
    "CappedOrderedDict",
    "CappedDefaultdict",
    "dict_comp",
    "dict_display",
    "set_comp",
    "set_display",
    "checked_method",
    "feed",
]

_FIRST = 4096  # items of the first chunk (and inputs up to this size are built in one call)
_MOST = 1 << 16  # items of a chunk at most
_SLOW = 0.02  # seconds: a chunk slower than this makes the next one 8 times smaller
_QUICK = 0.002  # seconds: a chunk quicker than this makes the next one twice as big


def feed(step: Callable[[list[Any]], Any], iterable: Iterable[Any]) -> None:
    """Call `step` with consecutive chunks of `iterable` (lists), sized so that one call stays short.

    Between two calls Python bytecode runs, so the cell's CPU/wall timers can raise there."""
    if type(iterable) in (list, tuple, str, bytes, range) and len(iterable) <= _FIRST:
        step(iterable if type(iterable) is list else list(iterable))
        return
    it = iter(iterable)
    size = _FIRST
    clock = time.perf_counter
    islice = itertools.islice
    while True:
        chunk = list(islice(it, size))
        if not chunk:
            return
        start = clock()
        step(chunk)
        spent = clock() - start
        if spent > _SLOW:
            size = max(1, size // 8)
        elif spent < _QUICK and size < _MOST:
            size *= 2


def _build_set(args: tuple[Any, ...], kwargs: dict[str, Any]) -> set[Any]:
    if kwargs:
        raise TypeError("set() takes no keyword arguments")
    if len(args) > 1:
        raise TypeError(f"set expected at most 1 argument, got {len(args)}")
    if not args:
        return set()
    source = args[0]
    if type(source) in (set, frozenset):
        return set(source)  # a copy of a table: entries are moved, no insertion walks a chain
    return _filled_set(source)


def _filled_set(source: Any) -> set[Any]:
    """A set of `source`'s items, inserted in chunks (`feed`), refusing tuples nested with sharing whose
    hash would run for minutes (compare.hash_work_check)."""
    out: set[Any] = set()

    def step(chunk: list[Any]) -> None:
        hash_chunk_check(chunk)
        insert_keys(out, chunk)  # equal costly tuples are matched in steps (keys.py)

    feed(step, source)
    return out


def _pairs(source: Any) -> Iterable[Any]:
    """What dict(source) inserts: a mapping's (key, value) pairs (read through keys() as dict() does), or
    the items of an iterable of pairs."""
    if hasattr(type(source), "keys"):
        return ((key, source[key]) for key in source.keys())
    return source


def _build_dict(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[Any, Any]:
    if len(args) > 1:
        raise TypeError(f"dict expected at most 1 argument, got {len(args)}")
    if args and type(args[0]) is dict:
        out = dict(args[0])  # a copy of a table (no insertion walks a chain)
    else:
        out = {}
        if args:
            feed(lambda chunk: insert_pairs(out, chunk), _pairs(args[0]))
    if kwargs:
        out.update(kwargs)
    return out


class _BulkMeta(type):
    """The metaclass of the capped classes: isinstance/issubclass answer for the real class; a call builds
    a real object in chunks (`feed`)."""

    _real: type
    _build: Callable[[tuple[Any, ...], dict[str, Any]], Any]

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return isinstance(sub, type) and issubclass(sub, cls._real)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return type.__getattribute__(cls, "_build")(args, kwargs)

    def __repr__(cls) -> str:
        real = cls._real
        return (
            f"<class '{real.__name__}'>"
            if real.__module__ == "builtins"
            else f"<class '{real.__module__}.{real.__name__}'>"
        )


class CappedSet(set, metaclass=_BulkMeta):  # type: ignore[type-arg]
    """`set` for cells (see the module docstring)."""

    _real = set
    _build = staticmethod(_build_set)


class CappedFrozenset(frozenset, metaclass=_BulkMeta):  # type: ignore[type-arg]
    """`frozenset` for cells: built as a set in chunks, then frozen (a copy of the table)."""

    _real = frozenset
    _build = staticmethod(lambda args, kwargs: frozenset(_build_set(args, kwargs)))


class CappedDict(dict, metaclass=_BulkMeta):  # type: ignore[type-arg]
    """`dict` for cells (see the module docstring)."""

    _real = dict
    _build = staticmethod(_build_dict)

    @staticmethod
    def fromkeys(iterable: Iterable[Any], value: Any = None, /) -> dict[Any, Any]:
        """dict.fromkeys in chunks (a real dict)."""
        out: dict[Any, Any] = {}
        feed(lambda chunk: insert_fromkeys(out, chunk, value), iterable)
        return out


def _build_ordered(args: tuple[Any, ...], kwargs: dict[str, Any]) -> collections.OrderedDict[Any, Any]:
    if len(args) > 1:
        raise TypeError(f"expected at most 1 arguments, got {len(args)}")
    out: collections.OrderedDict[Any, Any] = collections.OrderedDict()
    _dict_update(out, args, kwargs)
    return out


def _build_default(args: tuple[Any, ...], kwargs: dict[str, Any]) -> collections.defaultdict[Any, Any]:
    factory = args[0] if args else None
    if factory is not None and not callable(factory):
        raise TypeError("first argument must be callable or None")
    out: collections.defaultdict[Any, Any] = collections.defaultdict(factory)
    _dict_update(out, args[1:], kwargs)
    return out


class CappedOrderedDict(collections.OrderedDict, metaclass=_BulkMeta):  # type: ignore[type-arg]
    """`collections.OrderedDict` for cells: filled in chunks (its C constructor inserts all in one call)."""

    _real = collections.OrderedDict
    _build = staticmethod(_build_ordered)

    @staticmethod
    def fromkeys(iterable: Iterable[Any], value: Any = None, /) -> collections.OrderedDict[Any, Any]:
        """OrderedDict.fromkeys in chunks (a real OrderedDict)."""
        out: collections.OrderedDict[Any, Any] = collections.OrderedDict()
        feed(lambda chunk: insert_fromkeys(out, chunk, value), iterable)
        return out


class CappedDefaultdict(collections.defaultdict, metaclass=_BulkMeta):  # type: ignore[type-arg]
    """`collections.defaultdict` for cells: filled in chunks (its C constructor inserts all in one call)."""

    _real = collections.defaultdict
    _build = staticmethod(_build_default)


def set_display(items: list[Any]) -> set[Any]:
    """`{a, *x}` in a cell (policy.visit_Set): the items built in chunks, refusing tuples nested with sharing
    whose hash would run for minutes (compare.hash_work_check)."""
    return _filled_set(items)


def set_comp(items: Iterable[Any]) -> set[Any]:
    """`{e for ...}` in a cell (policy.visit_SetComp): built as `set_display`."""
    return _filled_set(items)


def dict_comp(pairs: Iterable[tuple[Any, Any]]) -> dict[Any, Any]:
    """`{k: v for ...}` in a cell (policy.visit_DictComp): the (key, value) pairs inserted in chunks
    (`feed`), equal costly tuple keys matched in steps (keys.insert_pairs)."""
    out: dict[Any, Any] = {}
    feed(lambda chunk: _insert_checked(out, chunk), pairs)
    return out


def _insert_checked(out: dict[Any, Any], pairs: list[tuple[Any, Any]]) -> None:
    """`out.update(pairs)`, through keys.insert_pairs (and the hash check) when some key is a tuple or a
    frozenset (the key types are read at C speed)."""
    keys = list(map(_FIRST_ITEM, pairs))
    kinds = set(map(type, keys))
    if tuple in kinds or frozenset in kinds or any(issubclass(kind, tuple) for kind in kinds):
        if kinds == {tuple} and short_records(keys):
            out.update(pairs)  # short records of scalars: cheap to hash and compare
            return
        hash_chunk_check(keys)
        insert_pairs(out, pairs)
    else:
        out.update(pairs)


_FIRST_ITEM = operator.itemgetter(0)


def dict_display(*entries: tuple[Any, ...]) -> dict[Any, Any]:
    """`{k: v, **m}` in a cell (policy.visit_Dict): `(k, v)` pairs and `(m,)` mappings in order."""
    out: dict[Any, Any] = {}
    pairs: list[tuple[Any, Any]] = []
    for entry in entries:
        if len(entry) == 2:
            pairs.append(entry)  # type: ignore[arg-type]
            continue
        if pairs:
            _insert_checked(out, pairs)
            pairs = []
        mapping = entry[0]
        if not hasattr(type(mapping), "keys"):
            raise TypeError(f"'{type(mapping).__name__}' object is not a mapping")
        if type(mapping) is dict and not out:
            out.update(mapping)  # into an empty dict: a copy of the table
        else:
            source = mapping.items() if type(mapping) is dict else _pairs(mapping)
            feed(lambda chunk: _insert_checked(out, chunk), source)
    if pairs:
        _insert_checked(out, pairs)
    return out


def hash_chunk_check(chunk: list[Any]) -> None:
    """compare.hash_work_check for the tuples of `chunk` that hold tuples (found at C speed)."""
    kinds = set(map(type, chunk))
    if tuple not in kinds:
        return
    tuples = chunk if kinds == {tuple} else [v for v in chunk if type(v) is tuple]
    if tuple not in set(map(type, itertools.chain.from_iterable(tuples))):
        return
    for value in tuples:
        hash_work_check(value)


def _set_arg(arg: Any) -> Any:
    """A method's iterable argument as a set built in chunks (sets and dicts' key views pass as they are)."""
    return arg if isinstance(arg, (set, frozenset, type({}.keys()))) else _build_set((arg,), {})


def _set_update(target: set[Any], args: tuple[Any, ...]) -> None:
    for arg in args:
        feed(lambda chunk: insert_keys(target, chunk), arg.keys() if type(arg) is dict else arg)


def _checked_set_method(obj: Any, name: str) -> Callable[..., Any] | None:
    real = set if isinstance(obj, set) else frozenset
    if name == "update" and real is set:
        return lambda *args: _set_update(obj, args)
    if name == "union":

        def union(*args: Any) -> Any:
            out = set(obj)  # a copy of a table: no insertion walks a chain
            _set_update(out, args)
            return out if real is set else frozenset(out)

        return union
    if name in ("issubset", "symmetric_difference", "symmetric_difference_update"):
        method = getattr(obj, name)
        return lambda arg: method(_set_arg(arg))
    return None


def _dict_update(target: dict[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if len(args) > 1:
        raise TypeError(f"update expected at most 1 argument, got {len(args)}")
    if args:
        source = args[0]
        if type(source) is dict and not target and type(target) is not collections.OrderedDict:
            target.update(source)  # into an empty dict: a copy of the table
        else:
            feed(lambda chunk: insert_pairs(target, chunk), _pairs(source))
    if kwargs:
        target.update(kwargs)


CHECKED_NAMES = frozenset(
    {"update", "union", "issubset", "symmetric_difference", "symmetric_difference_update"}
)
# Mapping types whose `update` is C code inserting item by item (OrderedDict's too).
_C_UPDATE = (dict, collections.defaultdict, collections.OrderedDict)


def checked_method(obj: Any, name: str) -> Callable[..., Any] | None:
    """The set/dict method `name` of `obj` built in chunks when its C code would insert every item of an
    iterable in one call (`s.update(x)`, `s.union(x)`, `s.issubset(x)`, `d.update(zip(a, b))` with keys that
    share one hash ran for minutes), else None (the real method serves)."""
    if isinstance(obj, type):  # unbound: `set.update(s, x)`, `dict.update(d, pairs)`
        real = getattr(obj, "_real", obj)
        if real not in (set, frozenset, *_C_UPDATE) or name not in CHECKED_NAMES:
            return None
        unbound = getattr(real, name, None)
        if unbound is None:
            return None

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(self, real):
                return unbound(self, *args, **kwargs)  # the real method's own TypeError
            checked = checked_method(self, name)
            return unbound(self, *args, **kwargs) if checked is None else checked(*args, **kwargs)

        return call
    kind = type(obj)
    if kind in (set, frozenset):
        return _checked_set_method(obj, name)
    if kind in _C_UPDATE and name == "update":
        return lambda *args, **kwargs: _dict_update(obj, args, kwargs)
    return None


for _cls in (CappedSet, CappedFrozenset, CappedDict, CappedOrderedDict, CappedDefaultdict):
    _cls.__name__ = _cls.__qualname__ = _cls._real.__name__
    _cls.__module__ = _cls._real.__module__
    _cls.__doc__ = _cls._real.__doc__

# What `type(x)` gives a cell for these real classes (builtins.SafeType), and the real class of each.
BULK_CLASSES: dict[type, type] = {
    set: CappedSet,
    frozenset: CappedFrozenset,
    dict: CappedDict,
    collections.OrderedDict: CappedOrderedDict,
    collections.defaultdict: CappedDefaultdict,
}
