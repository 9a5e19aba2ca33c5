"""Class machinery for cells: enums whose functional API checks member names, and a `singledispatch` whose
`register` never evaluates a string annotation (typing.get_type_hints would `eval` it outside the policy).
"""

from __future__ import annotations

import enum
import functools
import types
import typing
from collections.abc import Callable
from typing import Any

from rlm_kernel.sandbox.errors import refusal

__all__ = [
    "Enum",
    "Flag",
    "IntEnum",
    "IntFlag",
    "SafeEnumType",
    "StrEnum",
    "enum_names",
    "singledispatch",
    "singledispatchmethod",
]


class SafeEnumType(enum.EnumType):
    """EnumType whose functional API (`Enum('Name', names)`) refuses underscore member names (dunders would
    become methods of the new class, a type() factory)."""

    def __call__(cls, value: Any, names: Any = None, *args: Any, **kwargs: Any) -> Any:
        if names is not None:
            names = enum_names(names)
        return super().__call__(value, names, *args, **kwargs)


def enum_names(names: Any) -> Any:
    """Materialise the functional API's `names` once (no second look a stateful object could change)."""
    if isinstance(names, str):
        text = str.__str__(names)
        checked: list[Any] = text.replace(",", " ").split()
        keys = checked
        result: Any = text
    else:
        items = list(names)
        if hasattr(names, "keys"):
            result = [(key, names[key]) for key in items]
        elif all(type(item) is str for item in items):
            result = items
        else:
            result = [tuple(item) for item in items]
        keys = [item if type(item) is str else item[0] if len(item) == 2 else None for item in result]
    for name in keys:
        if type(name) is not str or name.startswith("_"):
            raise refusal(
                f"enum member name {name!r} is not allowed: names must be strings that do not start with '_'"
            )
    return result


class Enum(enum.Enum, metaclass=SafeEnumType):
    """enum.Enum for cells (its functional API refuses underscore names)."""


class IntEnum(enum.IntEnum, metaclass=SafeEnumType):
    """enum.IntEnum for cells."""


class StrEnum(enum.StrEnum, metaclass=SafeEnumType):
    """enum.StrEnum for cells."""


class Flag(enum.Flag, metaclass=SafeEnumType):
    """enum.Flag for cells."""


class IntFlag(enum.IntFlag, metaclass=SafeEnumType):
    """enum.IntFlag for cells."""


# -- functools.singledispatch: `register` without typing.get_type_hints -------------------------------------
def _is_dispatch_type(cls: Any) -> bool:
    """A class, or a union whose every member is a class (what functools accepts, with no evaluation)."""
    if isinstance(cls, type):
        return True
    is_union = isinstance(cls, types.UnionType) or typing.get_origin(cls) is typing.Union
    return is_union and all(isinstance(arg, type) for arg in typing.get_args(cls))


def _safe_register(real_register: Callable[..., Any]) -> Callable[..., Any]:
    """`register` of a singledispatch function that reads an annotation as the object it already is.

    functools resolves `@f.register` on an annotated function with `typing.get_type_hints`, which `eval`s
    string annotations (and strings inside `list['...']`, `Optional['...']`) in the function's globals — the
    cell's namespace, outside the policy. Here the first annotation must already be a class or a union of
    classes; a string is refused and nothing is ever evaluated.
    """

    def register(cls: Any, func: Any = None) -> Any:
        if _is_dispatch_type(cls):
            return real_register(cls) if func is None else real_register(cls, func)
        if func is not None:
            raise TypeError(f"Invalid first argument to `register()`. {cls!r} is not a class or union type.")
        annotations = getattr(cls, "__annotations__", None)
        if type(annotations) is not dict or not annotations:
            raise TypeError(
                f"Invalid first argument to `register()`: {cls!r}. Use either `@register(some_class)` or "
                "plain `@register` on an annotated function."
            )
        argname, annotation = next(iter(annotations.items()))
        if annotation is None:
            annotation = type(None)
        if isinstance(annotation, str) or not _is_dispatch_type(annotation):
            shown = "a string" if isinstance(annotation, str) else f"{type(annotation).__name__}, not a class"
            raise refusal(
                f"singledispatch register: the annotation of {str(argname)!r} is {shown}; the sandbox never "
                "evaluates annotations, so write the class itself (def f(x: int)) or use "
                "@f.register(SomeClass)"
            )
        return real_register(annotation, cls)

    register.__doc__ = "f.register(cls, func) or @f.register(cls) or @f.register on `def g(x: SomeClass)`."
    return register


def singledispatch(func: Any) -> Any:
    """functools.singledispatch whose `register` never evaluates string annotations (see `_safe_register`)."""
    dispatcher = functools.singledispatch(func)
    dispatcher.register = _safe_register(dispatcher.register)  # type: ignore[attr-defined]
    return dispatcher


class singledispatchmethod(functools.singledispatchmethod):  # noqa: N801 - mirrors functools
    """functools.singledispatchmethod whose `register` never evaluates string annotations."""

    def __init__(self, func: Any) -> None:
        super().__init__(func)
        self.dispatcher = singledispatch(func)
