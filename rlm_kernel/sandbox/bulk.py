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

import itertools
import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["BULK_CLASSES", "CappedDict", "CappedFrozenset", "CappedSet", "feed"]

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
    out: set[Any] = set()
    feed(out.update, source)
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
            feed(out.update, _pairs(args[0]))
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
        return f"<class '{cls._real.__name__}'>"


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
        feed(lambda chunk: out.update(dict.fromkeys(chunk, value)), iterable)
        return out


for _cls in (CappedSet, CappedFrozenset, CappedDict):
    _cls.__name__ = _cls.__qualname__ = _cls._real.__name__
    _cls.__module__ = "builtins"
    _cls.__doc__ = _cls._real.__doc__

# What `type(x)` gives a cell for these real classes (builtins.SafeType), and the real class of each.
BULK_CLASSES: dict[type, type] = {set: CappedSet, frozenset: CappedFrozenset, dict: CappedDict}
