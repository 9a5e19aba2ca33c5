"""Boundary coercion: values kernel code receives from a cell become exact built-ins before it uses them.

A cell can pass a `str` subclass whose `__len__`, `__hash__` or `encode` run its own code, an `int` subclass
with `__radd__`, a list subclass with `__iter__`. Kernel code that used such a value would run the cell's
code outside the cell's limits, maybe on another thread (the LLM event loop). Every helper, magic and
setting therefore copies what it gets into exact `str`/`int`/`float`/`list`/`tuple`/`dict` first, through
the built-in types' own slots (never a method the subclass may override), or refuses with a clear error.
"""

from __future__ import annotations

from typing import Any

from rlm_kernel.errors import RLMError

__all__ = [
    "CoercionError",
    "exact_float",
    "exact_int",
    "exact_list_of_str",
    "exact_str",
    "optional_str",
    "plain_data",
]

_MAX_ITEMS = 10_000_000  # plain_data: items copied in total (a cap on the work, not a data limit)
_MAX_DEPTH = 100


class CoercionError(RLMError, TypeError):
    """A value passed to a kernel helper is not of the type it takes (a `TypeError`, text only)."""


def _name(value: Any) -> str:
    return type(value).__name__ if type(type(value)) is type else "object"


def exact_str(value: Any, what: str) -> str:
    """`value` as an exact `str` (a subclass is copied without calling its methods), else refuse."""
    if type(value) is str:
        return value
    if issubclass(type(value), str):
        return str.__getitem__(value, slice(None))
    raise CoercionError(f"{what} must be a str, got {_name(value)}")


def optional_str(value: Any, what: str) -> str | None:
    """None, or `value` as an exact `str`."""
    return None if value is None else exact_str(value, what)


def exact_int(value: Any, what: str, *, allow_none: bool = False) -> int | None:
    """`value` as an exact `int` (bool refused; a subclass copied), else refuse."""
    if value is None and allow_none:
        return None
    kind = type(value)
    if kind is int:
        return value
    if issubclass(kind, int) and not issubclass(kind, bool):
        return int.__add__(value, 0)
    raise CoercionError(f"{what} must be a whole number, got {_name(value)}")


def exact_float(value: Any, what: str, *, allow_none: bool = False) -> float | None:
    """`value` as an exact `float` (exact ints converted; subclasses copied; bool refused), else refuse."""
    if value is None and allow_none:
        return None
    kind = type(value)
    if kind is float:
        return value
    if issubclass(kind, float):
        return float.__float__(value)
    if issubclass(kind, int) and not issubclass(kind, bool):
        return float(int.__add__(value, 0))
    raise CoercionError(f"{what} must be a number, got {_name(value)}")


def exact_list_of_str(value: Any, what: str) -> list[str]:
    """A list or tuple of str as a new exact `list` of exact `str` (subclasses read through base slots)."""
    kind = type(value)
    if issubclass(kind, list):
        items = list(list.__iter__(value))
    elif issubclass(kind, tuple):
        items = list(tuple.__iter__(value))
    else:
        raise CoercionError(f"{what} must be a list of str, got {_name(value)}")
    return [exact_str(item, f"{what}[{i}]") for i, item in enumerate(items)]


def plain_data(value: Any, what: str) -> Any:
    """A deep copy of `value` made only of exact None/bool/int/float/complex/str/bytes/list/tuple/dict.

    Subclasses are copied through the base type's slots; any other object is refused.
    """
    budget = [_MAX_ITEMS]

    def copy(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise CoercionError(f"{what} has more than {_MAX_ITEMS:,} items")
        if depth > _MAX_DEPTH:
            raise CoercionError(f"{what} is nested more than {_MAX_DEPTH} levels deep")
        kind = type(item)
        if item is None or kind in (bool, int, str, float, complex, bytes):
            return item
        if issubclass(kind, int):
            return int.__add__(item, 0)
        if issubclass(kind, float):
            return float.__float__(item)
        if issubclass(kind, str):
            return str.__getitem__(item, slice(None))
        if issubclass(kind, bytes):
            return bytes.__getitem__(item, slice(None))
        if issubclass(kind, list):
            return [copy(x, depth + 1) for x in list(list.__iter__(item))]
        if issubclass(kind, tuple):
            return tuple([copy(x, depth + 1) for x in tuple.__iter__(item)])
        if issubclass(kind, dict):
            return {copy(k, depth + 1): copy(v, depth + 1) for k, v in list(dict.items(item))}
        raise CoercionError(
            f"{what} holds a {_name(item)}; pass plain data (str, numbers, lists, tuples, dicts) instead"
        )

    return copy(value, 0)
