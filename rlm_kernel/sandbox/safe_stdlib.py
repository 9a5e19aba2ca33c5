"""Safe stand-ins for a few standard-library callables the facades serve instead of the originals.

Interruptible itertools producers, guarded attrgetter/methodcaller, capped decimal contexts, checked enums,
and `singledispatch` whose `register` never evaluates a string annotation (typing.get_type_hints would
`eval` it in the cell's globals, outside the policy).
"""

from __future__ import annotations

import decimal
import enum
import functools
import math
import operator
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rlm_kernel.sandbox.errors import LimitExceeded, refusal

__all__ = [
    "CappedContext",
    "Enum",
    "Flag",
    "IntEnum",
    "IntFlag",
    "SafeAttrgetter",
    "SafeEnumType",
    "SafeMethodcaller",
    "StrEnum",
    "capped",
    "chain",
    "combinatoric",
    "counter_elements",
    "gcd_like",
    "count",
    "cycle",
    "enum_names",
    "interruptible",
    "LocalContext",
    "localcontext",
    "prod",
    "reduce",
    "repeat",
    "singledispatch",
    "singledispatchmethod",
]


# -- itertools: infinite or huge producers are Python-level loops so timers can interrupt them ---------------
def count(start: Any = 0, step: Any = 1) -> Iterator[Any]:
    """itertools.count (interruptible)."""
    n = start
    while True:
        yield n
        n += step


def cycle(iterable: Iterable[Any]) -> Iterator[Any]:
    """itertools.cycle (interruptible)."""
    saved = []
    for item in iterable:
        yield item
        saved.append(item)
    if not saved:
        return
    while True:
        yield from saved


def repeat(obj: Any, times: int | None = None) -> Iterator[Any]:
    """itertools.repeat (interruptible)."""
    if times is None:
        while True:
            yield obj
    else:
        for _ in range(times):
            yield obj


def chain(*iterables: Iterable[Any]) -> Iterator[Any]:
    """itertools.chain (interruptible: chaining many big iterables is otherwise one long C loop)."""
    for iterable in iterables:
        for item in iterable:  # noqa: UP028 - `yield from` resumes without a check for pending signals
            yield item


def _chain_from_iterable(iterables: Iterable[Iterable[Any]]) -> Iterator[Any]:
    """itertools.chain.from_iterable (interruptible)."""
    for iterable in iterables:
        for item in iterable:  # noqa: UP028 - as in chain()
            yield item


chain.from_iterable = _chain_from_iterable  # type: ignore[attr-defined]


def interruptible(fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for item in fn(*args, **kwargs):  # noqa: UP028 - a loop, so timers can interrupt it
            yield item

    return wrapper


def reduce(function: Callable[[Any, Any], Any], iterable: Iterable[Any], *initial: Any) -> Any:
    """functools.reduce (interruptible)."""
    it = iter(iterable)
    if initial:
        if len(initial) > 1:
            raise TypeError("reduce expected at most 3 arguments")
        value = initial[0]
    else:
        try:
            value = next(it)
        except StopIteration:
            raise TypeError("reduce() of empty iterable with no initial value") from None
    for item in it:
        value = function(value, item)
    return value


def prod(mul: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """math.prod (interruptible), multiplying with the sandbox's size-checked `*`."""

    def prod(iterable: Iterable[Any], *, start: Any = 1) -> Any:
        value = start
        for item in iterable:
            value = mul(value, item)
        return value

    return prod


def capped(fn: Callable[..., Any], limit: int, what: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any) -> Any:
        for arg in args:
            if hasattr(type(arg), "__index__") and operator.index(arg) > limit:
                raise LimitExceeded(
                    f"{what}({', '.join(map(str, args))}) is over the sandbox's limit of "
                    f"{limit} for its arguments"
                )
        return fn(*args)

    return wrapper


def combinatoric(
    fn: Callable[..., Any], what: str, check_bits: Callable[[str, float], None]
) -> Callable[..., Any]:
    """math.comb / math.perm, refused when the result would be over the integer-size cap (estimated with
    lgamma before the C code starts: it cannot be interrupted)."""

    @functools.wraps(fn)
    def wrapper(n: Any, k: Any = None) -> Any:
        big_n = operator.index(n)
        big_k = big_n if k is None else operator.index(k)
        if 0 <= big_k <= big_n:
            ln = math.lgamma(big_n + 1) - math.lgamma(big_n - big_k + 1)
            if what == "math.comb":
                ln -= math.lgamma(big_k + 1)
            check_bits(f"{what}({big_n}, {big_k})", ln / math.log(2))
        return fn(n) if k is None else fn(n, k)

    return wrapper


def gcd_like(
    fn: Callable[..., Any], what: str, check_bits: Callable[[str, float], None]
) -> Callable[..., Any]:
    """math.gcd / math.lcm one pair at a time (a Python loop timers can stop), each under the integer-size
    cap: CPython's gcd is quadratic in the size of its arguments."""

    @functools.wraps(fn)
    def wrapper(*args: Any) -> Any:
        numbers = [operator.index(a) for a in args]
        if len(numbers) < 2:
            return fn(*numbers)
        value = numbers[0]
        for item in numbers[1:]:
            bits = (
                value.bit_length() + item.bit_length()
                if what == "math.lcm"
                else max(value.bit_length(), item.bit_length())
            )
            check_bits(what, bits)
            value = fn(value, item)
        return value

    return wrapper


def counter_elements(counter: Any) -> Callable[[], Iterator[Any]]:
    """Counter.elements as a Python-level loop (the C one repeats each key count times uninterruptibly)."""

    def elements() -> Iterator[Any]:
        for key, times in counter.items():
            for _ in range(operator.index(times)) if operator.index(times) > 0 else ():
                yield key

    return elements


class SafeAttrgetter:
    """operator.attrgetter that reads through the sandbox's attribute guard."""

    __slots__ = ("_paths", "_getattr")

    def __init__(self, getattr_: Callable[[Any, str], Any], *attrs: str) -> None:
        for attr in attrs:
            if type(attr) is not str:
                raise TypeError("attribute name must be a string")
        self._getattr = getattr_
        self._paths = tuple(tuple(a.split(".")) for a in attrs)
        for path in self._paths:
            for part in path:
                if part.startswith("_"):
                    raise refusal(
                        f"attribute {part!r} starts with '_': underscore attributes are not "
                        "available in the sandbox"
                    )

    def _one(self, obj: Any, path: tuple[str, ...]) -> Any:
        for part in path:
            obj = self._getattr(obj, part)
        return obj

    def __call__(self, obj: Any) -> Any:
        if len(self._paths) == 1:
            return self._one(obj, self._paths[0])
        return tuple(self._one(obj, p) for p in self._paths)

    def __repr__(self) -> str:
        return f"operator.attrgetter({', '.join(repr('.'.join(p)) for p in self._paths)})"


class SafeMethodcaller:
    """operator.methodcaller that looks the method up through the sandbox's attribute guard."""

    __slots__ = ("_name", "_args", "_kwargs", "_getattr")

    def __init__(self, getattr_: Callable[[Any, str], Any], name: str, *args: Any, **kwargs: Any) -> None:
        if type(name) is not str:
            raise TypeError("method name must be a string")
        if name.startswith("_"):
            raise refusal(
                f"method {name!r} starts with '_': underscore attributes are not available in the sandbox"
            )
        self._getattr, self._name, self._args, self._kwargs = getattr_, name, args, kwargs

    def __call__(self, obj: Any) -> Any:
        return self._getattr(obj, self._name)(*self._args, **self._kwargs)

    def __repr__(self) -> str:
        return f"operator.methodcaller({self._name!r}, ...)"


def _capped_prec(prec: Any) -> int:
    """`prec` as an exact int within `CappedContext.MAX_PREC` (converted once: no second `__index__`)."""
    value = operator.index(prec)
    if value > CappedContext.MAX_PREC:
        raise LimitExceeded(
            f"decimal precision {value} is over the sandbox's limit of {CappedContext.MAX_PREC}"
        )
    return value


class CappedContext(decimal.Context):
    """decimal.Context with a precision cap (huge precisions run in C and cannot be interrupted: ln() at
    10 000 digits takes seconds, at 100 000 minutes).

    The only context type a cell can hold (`Context()`, `localcontext()`, `.copy()`), so cells may set its
    attributes; `ctx.prec = n` is capped like the constructor's argument (converted once: no second
    `__index__`).
    """

    MAX_PREC = 5_000

    def __init__(self, prec: int | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(None if prec is None else _capped_prec(prec), *args, **kwargs)

    @property  # type: ignore[override]
    def prec(self) -> int:
        return _CONTEXT_PREC.__get__(self)

    @prec.setter
    def prec(self, value: Any) -> None:
        _CONTEXT_PREC.__set__(self, _capped_prec(value))

    def copy(self) -> CappedContext:
        return _capped_copy(self)


_CONTEXT_PREC = decimal.Context.prec
_CONTEXT_FIELDS = ("prec", "rounding", "Emin", "Emax", "capitals", "clamp")


def _capped_copy(ctx: decimal.Context) -> CappedContext:
    """A CappedContext with `ctx`'s settings (its precision brought under the cap), flags and traps."""
    return CappedContext(
        prec=min(ctx.prec, CappedContext.MAX_PREC),
        rounding=ctx.rounding,
        Emin=ctx.Emin,
        Emax=ctx.Emax,
        capitals=ctx.capitals,
        clamp=ctx.clamp,
        flags=[signal for signal, on in ctx.flags.items() if on],
        traps=[signal for signal, on in ctx.traps.items() if on],
    )


class LocalContext:
    """What `decimal.localcontext()` returns in a cell: inside the block the thread's context is a fresh
    `CappedContext` (a copy), the one `as ctx` binds, so `ctx.prec = 50` works and stays capped; the
    previous context is restored on exit. The kernel's own context is never handed out."""

    __slots__ = ("_rlm_new", "_rlm_saved")

    def __init__(self, new: CappedContext) -> None:
        self._rlm_new = new
        self._rlm_saved: decimal.Context | None = None

    def __enter__(self) -> CappedContext:
        self._rlm_saved = decimal.getcontext()
        decimal.setcontext(self._rlm_new)
        return self._rlm_new

    def __exit__(self, *exc: Any) -> None:
        saved, self._rlm_saved = self._rlm_saved, None
        if saved is not None:
            decimal.setcontext(saved)


def localcontext(ctx: decimal.Context | None = None, **kwargs: Any) -> LocalContext:
    """decimal.localcontext for cells (see `LocalContext`)."""
    if ctx is not None and not isinstance(ctx, decimal.Context):
        raise TypeError(f"localcontext() argument must be a decimal.Context, not {type(ctx).__name__}")
    new = _capped_copy(decimal.getcontext() if ctx is None else ctx)
    for name, value in kwargs.items():
        if name not in _CONTEXT_FIELDS and name not in ("flags", "traps"):
            raise TypeError(f"{name!r} is an invalid keyword argument for localcontext()")
        setattr(new, name, value)  # `prec` goes through CappedContext's capped setter
    return LocalContext(new)


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
