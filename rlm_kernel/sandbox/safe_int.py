"""Integer conversions under the integer-size cap: the `int` cells see, and Decimal↔int conversion checks.

`int` in a cell is `CappedInt`, a subclass of the real `int` whose metaclass checks each call before CPython's
conversion runs (it returns a real `int`): `int(text, 16)` of a long text (power-of-two bases are not
covered by CPython's digit limit) and `int(decimal)` of a huge Decimal (`int(Decimal('1e20000000'))`, a
quadratic C conversion that ran for minutes) are refused. `isinstance(x, int)`, `issubclass(bool, int)`,
`type(5) is int` (builtins.SafeType maps the real class), `np.zeros(3, dtype=int)` and `x.astype(int)` (numpy
reads its `dtype`) behave as with the real class. A class statement `class I(int)` subclasses the real
`int` with a checked `__new__` (`safe_build_class`), so Enum mixins keep working.

`decimal_to_int_check` is the one rule for every Decimal→int conversion (int(), round(), math.floor/ceil/
trunc, as_integer_ratio, Fraction(Decimal), '%d' % Decimal).
"""

from __future__ import annotations

import decimal
import fractions
import math
import operator
from typing import Any

from rlm_kernel.sandbox.bulk import BULK_CLASSES
from rlm_kernel.sandbox.errors import LimitExceeded

__all__ = [
    "CELL_CLASSES",
    "REAL_CLASSES",
    "DECIMAL_INT_DIGITS",
    "CappedFraction",
    "CappedInt",
    "capped_int_new",
    "check_int_call",
    "configure",
    "decimal_to_int_check",
]

# Digits of an integer made from a Decimal (and of a Decimal made from an int through the facade): the
# conversion is quadratic in C (about 1.5 s at 100 000 digits on this machine, minutes at millions), and the
# time limit cannot stop it.
DECIMAL_INT_DIGITS = 100_000
_LIMIT = [2_000_000]  # the integer-size cap in bits (Limits.max_int_bits of the session that built builtins)
_LOG2_10 = math.log2(10)


def configure(max_int_bits: int) -> None:
    """Set the integer-size cap the conversions check (from the session's Limits; 0 = uncapped)."""
    _LIMIT[0] = max_int_bits


def _too_big(what: str, bits: float) -> LimitExceeded:
    return LimitExceeded(
        f"{what} would produce an integer of about {int(bits)} bits, over the limit of {_LIMIT[0]} bits "
        "(RLM_MAX_INT_BITS)"
    )


def decimal_to_int_check(value: Any, what: str) -> None:
    """Refuse converting the Decimal `value` to an int of more than DECIMAL_INT_DIGITS digits (or the cap)."""
    if not isinstance(value, decimal.Decimal) or not decimal.Decimal.is_finite(value):
        return
    digits = decimal.Decimal.adjusted(value) + 1  # the real method: a subclass cannot lie
    if digits <= 0:
        return
    if digits > DECIMAL_INT_DIGITS or (_LIMIT[0] and digits * _LOG2_10 > _LIMIT[0]):
        raise LimitExceeded(
            f"{what} of a Decimal with {digits} integer digits is over the sandbox's limit of "
            f"{DECIMAL_INT_DIGITS} digits (the conversion is quadratic C code the time limit cannot stop); "
            "keep it a Decimal, or quantize/scale it first"
        )


def _text_length(value: Any) -> int | None:
    if isinstance(value, str):
        return str.__len__(value)
    if isinstance(value, (bytes, bytearray)):
        return len(memoryview(value))
    return None


def check_int_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The checks of `int(x)` / `int(text, base)` before CPython converts."""
    if not args:
        return
    value = args[0]
    if isinstance(value, decimal.Decimal):
        decimal_to_int_check(value, "int()")
        return
    base: Any = args[1] if len(args) > 1 else kwargs.get("base")
    if base is None or not _LIMIT[0]:
        return
    length = _text_length(value)
    if length is None:
        return
    base = operator.index(base)
    bits = length * math.log2(base if base >= 2 else 32)  # base 0 reads a prefix: count the widest
    if bits > _LIMIT[0]:
        raise _too_big(f"int() of a {length}-character text in base {base}", bits)


class _CappedIntMeta(type):
    """The metaclass of `CappedInt`: isinstance/issubclass answer for the real `int`; calls are checked."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, int)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return issubclass(sub, int)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        check_int_call(args, kwargs)
        return int(*args, **kwargs)

    def __repr__(cls) -> str:
        return "<class 'int'>"

    @property
    def dtype(cls) -> Any:
        """What numpy and pandas read to turn `dtype=int` into their integer dtype."""
        import numpy as np

        return np.dtype(int)


class CappedInt(int, metaclass=_CappedIntMeta):
    """`int` for cells (see the module docstring)."""


CappedInt.__name__ = CappedInt.__qualname__ = "int"
CappedInt.__module__ = "builtins"
CappedInt.__doc__ = int.__doc__


def capped_int_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    """`__new__` of an int subclass defined in a cell: the checks of `int()`, then int's own."""
    check_int_call(args, kwargs)
    return int.__new__(cls, *args, **kwargs)


class _CappedFractionMeta(type(fractions.Fraction)):  # type: ignore[misc]
    """The metaclass of `CappedFraction`: isinstance/issubclass answer for the real Fraction; calls check
    Decimal arguments (Fraction(Decimal) converts the Decimal to integers in C)."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, fractions.Fraction)

    def __subclasscheck__(cls, sub: Any) -> bool:
        # by the MRO: Fraction's ABC check walks its subclasses (this one), which must not ask it back
        return isinstance(sub, type) and fractions.Fraction in type.__getattribute__(sub, "__mro__")

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        for arg in (*args, *kwargs.values()):
            decimal_to_int_check(arg, "Fraction()")
        return fractions.Fraction(*args, **kwargs)

    def __repr__(cls) -> str:
        return "<class 'fractions.Fraction'>"


class CappedFraction(fractions.Fraction, metaclass=_CappedFractionMeta):
    """`fractions.Fraction` for cells: Decimal arguments checked by `decimal_to_int_check`."""

    @classmethod
    def from_decimal(cls, dec: Any) -> fractions.Fraction:
        decimal_to_int_check(dec, "Fraction.from_decimal()")
        return fractions.Fraction.from_decimal(dec)


CappedFraction.__name__ = CappedFraction.__qualname__ = "Fraction"
CappedFraction.__module__ = "fractions"
CappedFraction.__doc__ = fractions.Fraction.__doc__

# What `type(x)` gives a cell for these real classes (builtins.SafeType), and what a class statement
# subclasses when a cell names the checked one (the real class).
CELL_CLASSES: dict[type, type] = {int: CappedInt, fractions.Fraction: CappedFraction, **BULK_CLASSES}
REAL_CLASSES: dict[type, type] = {checked: real for real, checked in CELL_CLASSES.items()}
