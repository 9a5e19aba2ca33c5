"""Size caps on operations whose cost C code pays at once: `**`, `<<`, `*` repetition, `%` and format widths.

`Caps(limits)` holds the checked operations the policy rewrites `a ** b`, `a * b`, `f'{x:spec}'` into.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import math
import numbers
import operator
import re
import string
from collections.abc import Callable
from typing import Any

from rlm_kernel.sandbox.data.attrs import data_text_size, is_data_class
from rlm_kernel.sandbox.errors import LimitExceeded
from rlm_kernel.sandbox.limits import Limits
from rlm_kernel.sandbox.safe_int import decimal_to_int_check

__all__ = ["PERCENT_INT", "PERCENT_SPEC", "Caps", "SafeFormatter"]


class SafeFormatter(string.Formatter):
    """`str.format` that reads fields through the sandbox's attribute/item guards and caps widths."""

    def __init__(
        self,
        getattr_: Callable[[Any, str], Any],
        getitem: Callable[[Any, Any], Any],
        check_spec: Callable[[Any, str], None],
    ) -> None:
        self._getattr = getattr_
        self._getitem = getitem
        self._check_spec = check_spec

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        import _string

        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = self._getattr(obj, key) if is_attr else self._getitem(obj, key)
        return obj, first

    def format_field(self, value: Any, format_spec: str) -> Any:
        self._check_spec(value, format_spec)
        return format(value, format_spec)


_WIDTH_DIGITS = re.compile(r"\d+")
PERCENT_INT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[diu]")


def _check_decimal_fixed(value: decimal.Decimal, cap: int) -> None:
    """Fixed-point formatting of a Decimal writes every digit of its exponent ('1e200000000' → 200 MB)."""
    if not cap or not decimal.Decimal.is_finite(value):
        return
    size = abs(decimal.Decimal.adjusted(value)) + len(decimal.Decimal.as_tuple(value).digits)
    if size > cap:
        raise LimitExceeded(
            f"fixed-point formatting of this Decimal would write about {size} characters, over the limit of "
            f"{cap} (RLM_MAX_SEQUENCE); use the 'e' or 'g' format"
        )


PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


class Caps:
    """The checked versions of the operations whose size `limits` caps; the guards hand out its bound methods
    (`_pow_`, `_mul_`, `_lshift_`, `_mod_`, `_format_`, `pow`, `format`, …). Needs nothing but the limits, so
    each check can be tried alone: `Caps(Limits(max_int_bits=64)).mul(2**40, 2**40)` raises."""

    __slots__ = ("limits", "small", "inplace")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        # exact ints below this magnitude multiply without a check (their product stays under the cap)
        self.small = 1 << 4096 if limits.max_int_bits >= 8192 or not limits.max_int_bits else 0
        # what `_inplacevar_` applies for `x op= y` (the operators the caps cover go through their check)
        self.inplace: dict[str, Callable[[Any, Any], Any]] = {
            "+=": operator.iadd,
            "-=": operator.isub,
            "*=": self.imul,
            "/=": operator.itruediv,
            "%=": self.mod,
            "**=": self.pow,
            "<<=": self.lshift,
            ">>=": operator.irshift,
            "|=": operator.ior,
            "^=": operator.ixor,
            "&=": operator.iand,
            "//=": operator.ifloordiv,
            "@=": operator.imatmul,
        }

    # -- format widths --------------------------------------------------------------------------------------
    def check_spec(self, value: Any, spec: str) -> None:
        limits = self.limits
        if not spec or not limits.max_format_width:
            return
        if isinstance(value, (datetime.date, datetime.time)):
            return
        if isinstance(value, decimal.Decimal) and spec[-1:] in ("f", "F", "%"):
            _check_decimal_fixed(value, limits.max_sequence)
        for digits in _WIDTH_DIGITS.findall(spec):
            if len(digits) > 7 or int(digits) > limits.max_format_width:
                raise LimitExceeded(
                    f"format width/precision {digits} is over the limit of "
                    f"{limits.max_format_width} (RLM_MAX_FORMAT_WIDTH)"
                )

    def format(self, value: Any, spec: str = "") -> str:
        if type(spec) is not str:
            raise TypeError(f"format() argument 2 must be str, not {type(spec).__name__}")
        self.check_spec(value, spec)
        return format(value, spec)

    def fstring_format(self, value: Any, conversion: int, spec: str) -> str:
        if conversion == 115:
            value = str(value)
        elif conversion == 114:
            value = repr(value)
        elif conversion == 97:
            value = ascii(value)
        return self.format(value, spec)

    def mod(self, a: Any, b: Any) -> Any:
        ta = type(a)
        if ta is int or ta is float:
            return a % b
        limits = self.limits
        if isinstance(a, (str, bytes)) and limits.max_format_width:
            text = a if isinstance(a, str) else a.decode("latin-1")
            args = b if isinstance(b, tuple) else (b,)
            for arg in args:
                if isinstance(arg, decimal.Decimal) and PERCENT_INT.search(text):
                    decimal_to_int_check(arg, "'%d' formatting")  # %d/%i/%u convert with int()
            for width, precision in PERCENT_SPEC.findall(text):
                for part in (width, precision):
                    if part == "*":
                        for arg in args:
                            if isinstance(arg, int) and abs(operator.index(arg)) > limits.max_format_width:
                                raise LimitExceeded(
                                    f"format width {arg} is over the limit of "
                                    f"{limits.max_format_width} (RLM_MAX_FORMAT_WIDTH)"
                                )
                    elif part and (len(part) > 7 or int(part) > limits.max_format_width):
                        raise LimitExceeded(
                            f"format width/precision {part} is over the limit of "
                            f"{limits.max_format_width} (RLM_MAX_FORMAT_WIDTH)"
                        )
        return a % b

    # -- integer sizes --------------------------------------------------------------------------------------
    def too_big_int(self, what: str, bits: int) -> LimitExceeded:
        return LimitExceeded(
            f"{what} would produce an integer of about {bits} bits, over the limit of "
            f"{self.limits.max_int_bits} bits (RLM_MAX_INT_BITS)"
        )

    def int_bits(self, what: str, bits: float) -> None:
        """Refuse an integer result of `bits` bits over the cap (`_int_bits_`)."""
        if self.limits.max_int_bits and bits > self.limits.max_int_bits:
            raise self.too_big_int(what, int(bits))

    def pow(self, a: Any, b: Any, mod: Any = None) -> Any:
        if not self.limits.max_int_bits:
            return a**b if mod is None else pow(a, b, mod)
        check_int_bits = self.int_bits
        if isinstance(b, fractions.Fraction) and b.denominator == 1:
            b = b.numerator  # what Fraction.__rpow__ / __pow__ will raise to
        if mod is None and isinstance(b, int):
            exp = operator.index(b)  # exact ints: subclasses cannot lie
            if isinstance(a, int):
                check_int_bits(
                    f"{_short(operator.index(a))} ** {_short(exp)}", _pow_bits(operator.index(a), exp)
                )
            elif isinstance(a, fractions.Fraction):
                biggest = max(abs(a.numerator), a.denominator)
                check_int_bits(f"Fraction ** {_short(exp)}", _pow_bits(biggest, abs(exp)))
        elif mod is not None and isinstance(a, int) and isinstance(b, int) and isinstance(mod, int):
            exp_bits, mod_bits = operator.index(b).bit_length(), operator.index(mod).bit_length()
            check_int_bits("pow() with a modulus", mod_bits)
            if exp_bits * float(mod_bits) ** 1.585 > _POWMOD_WORK:
                raise LimitExceeded(
                    f"pow() with a {exp_bits}-bit exponent and a {mod_bits}-bit modulus is over the "
                    "sandbox's limit of work for one uninterruptible C call (it would run for minutes); "
                    "use smaller numbers"
                )
        return a**b if mod is None else pow(a, b, mod)

    def lshift(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int) and self.limits.max_int_bits:
            value, shift = operator.index(a), operator.index(b)
            bits = abs(value).bit_length() + shift
            if value and bits > self.limits.max_int_bits:
                raise self.too_big_int(f"{_short(value)} << {_short(shift)}", bits)
        return a << b

    def from_bytes(self, kind: type) -> Callable[..., Any]:
        """`int.from_bytes` under the integer-size cap (8 bits a byte, counted before it is built)."""
        real = kind.from_bytes
        check_int_bits = self.int_bits

        def checked(data: Any, byteorder: Any = "big", *, signed: bool = False) -> Any:
            if isinstance(data, (bytes, bytearray, str)) or hasattr(type(data), "__len__"):
                check_int_bits("int.from_bytes", 8 * len(data))
                return real(data, byteorder, signed=signed)
            data = bytes(data)  # an iterator of byte values: at most RLM_MAX_SEQUENCE of them, as bytes()
            check_int_bits("int.from_bytes", 8 * len(data))
            return real(data, byteorder, signed=signed)

        checked.__name__ = checked.__qualname__ = "from_bytes"
        return checked

    # -- repetition -----------------------------------------------------------------------------------------
    def repeat_check(self, seq: Any, times: Any) -> None:
        """`seq * times` for every sized container (str, bytes, list, deque, UserList, array-likes …)."""
        limits = self.limits
        if not limits.max_sequence or isinstance(seq, _NUMBERS) or not hasattr(type(times), "__index__"):
            return
        if is_data_class(type(seq)):
            if hasattr(type(times), "__index__") and not is_data_class(type(times)):
                n = operator.index(times)
                text = data_text_size(seq) if n > 1 else 0  # string elements repeat element-wise
                if text * n > limits.max_sequence:
                    raise LimitExceeded(
                        f"repeating the text in this {type(seq).__name__} ({text} characters) {n} times "
                        f"gives {text * n} characters, over the limit of {limits.max_sequence} "
                        "(RLM_MAX_SEQUENCE)"
                    )
            return  # numbers multiply element-wise (memory bounded by RLIMIT_AS)
        if is_data_class(type(times)) and not isinstance(times, numbers.Integral):
            return  # np.int64 repeats
        if isinstance(times, _NUMBERS) and not isinstance(times, int):
            return
        if not hasattr(type(seq), "__len__"):
            return
        n = operator.index(times)  # what the repetition will use, even for objects defining __index__
        size = len(seq)
        total = size * n
        if total > limits.max_sequence:
            raise LimitExceeded(
                f"repeating a {type(seq).__name__} of length {size} {n} times "
                f"gives {total} items, over the limit of {limits.max_sequence} "
                "(RLM_MAX_SEQUENCE)"
            )

    def mul(self, a: Any, b: Any) -> Any:
        ta, tb = type(a), type(b)
        if ta is float or tb is float:
            return a * b
        small = self.small
        if ta is int and tb is int and -small < a < small and -small < b < small:
            return a * b
        max_int_bits = self.limits.max_int_bits
        if isinstance(a, int) and isinstance(b, int):
            if max_int_bits:
                bits = operator.index(a).bit_length() + operator.index(b).bit_length()
                if bits > max_int_bits:
                    raise self.too_big_int("this multiplication", bits)
            return a * b
        if isinstance(a, _RATIONALS) and isinstance(b, _RATIONALS) and max_int_bits:
            self.int_bits("this multiplication", _rational_bits(a) + _rational_bits(b))
            return a * b
        self.repeat_check(a, b)
        self.repeat_check(b, a)
        return a * b

    def imul(self, a: Any, b: Any) -> Any:
        if not isinstance(a, _NUMBERS) and hasattr(type(a), "__len__") and hasattr(type(b), "__index__"):
            self.repeat_check(a, b)  # in place for list, bytearray, deque, UserList …
            return operator.imul(a, b)
        return self.mul(a, b)


# Work allowed in one modular pow(): exponent bits x (modulus bits)**1.585 (about 2-4 s of C at the limit).
_POWMOD_WORK = 4e10
_NUMBERS = (int, float, complex, decimal.Decimal, fractions.Fraction)
_RATIONALS = (int, fractions.Fraction)


def _pow_bits(base: int, exp: int) -> float:
    """Bits of `base ** exp` (exact to a fraction of a bit: exp * log2|base|); 0 when it cannot grow."""
    if exp <= 1 or abs(base) <= 1:
        return 0.0
    return exp * math.log2(abs(base))


def _rational_bits(x: Any) -> int:
    if isinstance(x, int):
        return operator.index(x).bit_length()
    return max(abs(x.numerator).bit_length(), x.denominator.bit_length())


def _short(n: int) -> str:
    text = str(n) if abs(n).bit_length() < 64 else f"<{abs(n).bit_length()}-bit int>"
    return text
