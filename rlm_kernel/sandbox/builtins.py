"""The builtins a cell sees: data-work builtins with size caps, guarded getattr & co, refusing stubs.

`make_builtins(session, guards, namespace)` returns the dict installed as the namespace's `__builtins__`.
"""

from __future__ import annotations

import builtins as _py
import enum
import itertools
import operator
import sys
import types
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from rlm_kernel.sandbox.bulk import CappedDict, CappedFrozenset, CappedSet
from rlm_kernel.sandbox.compare import checked_hash
from rlm_kernel.sandbox.data.standins import check_base, class_for_cell
from rlm_kernel.sandbox.errors import LimitExceeded, SandboxTypeError, refusal
from rlm_kernel.sandbox.names import REFUSED_NAMES
from rlm_kernel.sandbox.ordering import checked_max, checked_min, chunked_sort, python_level
from rlm_kernel.sandbox.origin import register_pass_through
from rlm_kernel.sandbox.safe_int import (
    CELL_CLASSES,
    REAL_CLASSES,
    CappedInt,
    capped_int_new,
    configure,
    decimal_to_int_check,
)

if TYPE_CHECKING:
    from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["SafeType", "chunked_sort", "make_builtins", "python_level", "PLAIN_BUILTINS", "EXCEPTIONS"]

PLAIN_BUILTINS = (
    "abs all any ascii bin bool callable chr classmethod complex dict divmod enumerate filter float "
    "frozenset hash hex id isinstance issubclass len list map max min next object oct ord property repr "
    "reversed set slice sorted staticmethod str sum super tuple zip NotImplemented Ellipsis"
).split()

EXCEPTIONS = (
    "ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup BufferError BytesWarning "
    "DeprecationWarning EOFError EncodingWarning Exception ExceptionGroup FloatingPointError FutureWarning "
    "GeneratorExit ImportError ImportWarning IndentationError IndexError KeyError KeyboardInterrupt "
    "LookupError MemoryError ModuleNotFoundError NameError NotImplementedError OSError OverflowError "
    "PendingDeprecationWarning RecursionError ReferenceError RuntimeError RuntimeWarning StopAsyncIteration "
    "StopIteration SyntaxError SyntaxWarning TabError TimeoutError TypeError UnboundLocalError "
    "UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError UnicodeWarning UserWarning "
    "ValueError Warning ZeroDivisionError"
).split()


class _SafeTypeMeta(type):
    """Makes `SafeType` stand in for `type` in isinstance/issubclass while refusing 3-argument calls."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, type)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return isinstance(sub, type) and issubclass(sub, type)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) != 1 or kwargs:
            raise refusal(
                "type() with 3 arguments builds classes without the sandbox's checks; use a class statement"
            )
        kind = type(args[0])
        if issubclass(kind, type):
            return cls
        if kind in CELL_CLASSES:  # int, Fraction: the checked classes cells see under those names
            return CELL_CLASSES[kind]
        if "numpy" in sys.modules:  # numpy's array classes are served as stand-ins (data/standins.py)
            return class_for_cell(kind)
        return kind

    def __repr__(cls) -> str:
        return "<class 'type'>"


class SafeType(metaclass=_SafeTypeMeta):
    """`type(obj)` for cells: the class of `obj`; metaclasses (even `type`) are never handed out."""


SafeType.__name__ = SafeType.__qualname__ = "type"


def _refuser(name: str, reason: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise refusal(reason)

    refused.__name__ = refused.__qualname__ = name
    return refused


def _iter_callable(fn: Callable[[], Any], sentinel: Any) -> Iterator[Any]:
    # A Python-level loop so that CPU timers can interrupt it even when a C function consumes it.
    while True:
        value = fn()
        if value == sentinel:
            return
        yield value


_CHUNK = 1024  # items a C consumer handles between two chances for the time limit to stop it


def _map(fn: Any, iterable: Any, *iterables: Any) -> Iterator[Any]:
    """map() whose items each pass through Python code (a C function mapped over many big items, e.g.
    map(sum, [range(10**8)] * 100), would otherwise be one uninterruptible C loop)."""
    return map(python_level(fn), iterable, *iterables)


def _filter(fn: Any, iterable: Any) -> Iterator[Any]:
    """filter() with its predicate run through Python code (see `_map`); filter(None, …) stays native (the
    truth of a built-in value costs O(1); that of your own objects runs their Python `__bool__`)."""
    return filter(python_level(fn), iterable)


def _sorted(iterable: Any, /, *, key: Any = None, reverse: bool = False) -> list[Any]:
    """sorted() for cells (see `chunked_sort`)."""
    return chunked_sort(list(iterable), key, reverse)


def _round(number: Any, ndigits: Any = None) -> Any:
    """round() whose one-argument form (an int) checks a Decimal's size first (safe_int.py)."""
    if ndigits is None:
        decimal_to_int_check(number, "round()")
        return round(number)
    return round(number, ndigits)


def _sum(iterable: Any, /, start: Any = 0) -> Any:
    """sum() in chunks of _CHUNK items, so the time limit can stop it between chunks (a sum over a list of
    huge integers, or of a long C iterator, is otherwise one uninterruptible C loop)."""
    it = iter(iterable)
    total = start
    while True:
        chunk = list(itertools.islice(it, _CHUNK))
        if not chunk:
            return total
        total = sum(chunk, total)


def make_builtins(
    session: SandboxSession, guards: dict[str, Any], namespace: dict[str, Any]
) -> dict[str, Any]:
    """Build the `__builtins__` dict for one namespace."""
    limits = session.limits
    configure(limits.max_int_bits)
    table: dict[str, Any] = {name: getattr(_py, name) for name in PLAIN_BUILTINS + EXCEPTIONS}

    def safe_range(*args: Any) -> range:
        r = range(*args)
        if limits.max_range:
            try:
                n = len(r)
            except OverflowError:
                n = limits.max_range + 1
            if n > limits.max_range:
                raise LimitExceeded(
                    f"range() of {_count(r)} items is over the limit of {limits.max_range} "
                    "(RLM_MAX_RANGE); process the data in chunks"
                )
        return r

    def sized(kind: type) -> Callable[..., Any]:
        def make(*args: Any, **kwargs: Any) -> Any:
            first = args[0] if args else None
            sized_arg = not isinstance(first, (str, bytes, bytearray)) and hasattr(type(first), "__index__")
            if sized_arg and limits.max_sequence and operator.index(first) > limits.max_sequence:
                raise LimitExceeded(
                    f"{kind.__name__}({args[0]}) is over the limit of {limits.max_sequence} "
                    "items (RLM_MAX_SEQUENCE)"
                )
            return kind(*args, **kwargs)

        make.__name__ = make.__qualname__ = kind.__name__
        return make

    def safe_iter(obj: Any, *sentinel: Any) -> Iterator[Any]:
        if not sentinel:
            return iter(obj)
        if len(sentinel) > 1:
            raise TypeError("iter expected at most 2 arguments")
        if not callable(obj):
            raise TypeError("iter(v, w): v must be callable")
        return _iter_callable(obj, sentinel[0])

    def safe_dir(*args: Any) -> list[str]:
        if not args:
            return sorted(k for k in namespace if not k.startswith("_"))
        if len(args) > 1:
            raise TypeError(f"dir expected at most 1 argument, got {len(args)}")
        return sorted(n for n in _py.dir(args[0]) if not n.startswith("_"))

    def safe_import(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        return session.import_facade(name, fromlist, level)

    def safe_vars(*args: Any) -> dict[str, Any]:
        if len(args) != 1:
            raise refusal("vars() without an argument is not available: it would expose the sandbox guards")
        obj = args[0]
        if not session.is_user_object(obj):
            if not hasattr(obj, "__dict__"):  # plain Python refuses these too, with a TypeError
                raise refusal(
                    "vars() is only available for objects of classes defined in cells "
                    "(and this object has no __dict__)",
                    SandboxTypeError,
                )
            raise refusal("vars() is only available for objects of classes defined in cells")
        return {k: v for k, v in _py.vars(obj).items() if not (k.startswith("__") and k.endswith("__"))}

    from IPython.display import display

    table.update(
        {
            "range": safe_range,
            "map": _map,
            "filter": _filter,
            "sorted": _sorted,
            "min": checked_min,
            "hash": checked_hash,
            "max": checked_max,
            "sum": _sum,
            "int": CappedInt,
            "set": CappedSet,
            "frozenset": CappedFrozenset,
            "dict": CappedDict,
            "round": _round,
            "bytes": sized(bytes),
            "bytearray": sized(bytearray),
            "iter": safe_iter,
            "dir": safe_dir,
            "type": SafeType,
            "display": display,
            "getattr": guards["getattr"],
            "hasattr": guards["hasattr"],
            "setattr": guards["setattr"],
            "delattr": guards["delattr"],
            "format": guards["format"],
            "pow": guards["pow"],
            "__import__": safe_import,
            "__build_class__": safe_build_class,
            "__name__": "builtins",
            "_rlm_sandbox_builtins": True,
            "True": True,
            "False": False,
            "None": None,
        }
    )
    for name, reason in REFUSED_NAMES.items():
        table[name] = _refuser(name, reason)
    table["vars"] = safe_vars
    return table


def _count(r: range) -> str:
    try:
        return str(len(r))
    except OverflowError:
        return "more than 2**63"


def safe_build_class(func: Any, name: str, *bases: Any, **kwargs: Any) -> Any:
    """`__build_class__` for cells: refuses exception-group bases *before* the class body or its metaclass
    runs. CPython's `except*` calls a group's own `split` (an override can hand a handler a non-exception or
    crash the interpreter), and checking after creation is too late: an Enum mixin builds its members — and
    runs their `__init__` — while the class is being created, so an instance could escape a later refusal."""
    # the real int, set, dict … (Enum mixins work; the checked classes build only real objects)
    bases = tuple(next((r for c, r in REAL_CLASSES.items() if c is base), base) for base in bases)
    resolved = types.resolve_bases(bases)
    if resolved and any(lib in sys.modules for lib in ("numpy", "pandas", "matplotlib")):
        for base in resolved:
            check_base(base)
    for base in resolved:
        if isinstance(base, type) and issubclass(base, BaseExceptionGroup):
            raise refusal(
                "subclassing ExceptionGroup is not available in the sandbox; raise ExceptionGroup(...) "
                "or BaseExceptionGroup(...) itself"
            )
    cls = _py.__build_class__(func, name, *bases, **kwargs)
    if isinstance(cls, type) and issubclass(cls, int) and not issubclass(cls, enum.Enum):
        if "__new__" not in cls.__dict__:  # cells cannot define __new__: int(text, 16)'s checks
            cls.__new__ = staticmethod(capped_int_new)  # type: ignore[assignment]
    return cls


register_pass_through(safe_build_class.__code__)  # a class body's caller is the cell (origin.py)
