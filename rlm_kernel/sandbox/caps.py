"""Size caps on operations whose cost C code pays at once: `**`, `<<`, `*` repetition, `%` and format widths.

`make_caps(limits)` returns the checked operations the policy rewrites `a ** b`, `a * b`, `f'{x:spec}'` into.
"""

from __future__ import annotations

import datetime
import operator
import re
import string
from collections.abc import Callable
from typing import Any

from rlm_kernel.sandbox.errors import LimitExceeded
from rlm_kernel.sandbox.limits import Limits

__all__ = ["PERCENT_SPEC", "SafeFormatter", "make_caps"]


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
PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def make_caps(limits: Limits) -> dict[str, Any]:
    """Checked versions of the operations whose size the limits cap (keys: check_spec, format,
    fstring_format, pow, lshift, mul, mod, inplace)."""

    def check_spec(value: Any, spec: str) -> None:
        if not spec or not limits.max_format_width:
            return
        if isinstance(value, (datetime.date, datetime.time)):
            return
        for digits in _WIDTH_DIGITS.findall(spec):
            if len(digits) > 7 or int(digits) > limits.max_format_width:
                raise LimitExceeded(
                    f"format width/precision {digits} is over the limit of "
                    f"{limits.max_format_width} (RLM_MAX_FORMAT_WIDTH)"
                )

    def safe_format(value: Any, spec: str = "") -> str:
        if type(spec) is not str:
            raise TypeError(f"format() argument 2 must be str, not {type(spec).__name__}")
        check_spec(value, spec)
        return format(value, spec)

    def fstring_format(value: Any, conversion: int, spec: str) -> str:
        if conversion == 115:
            value = str(value)
        elif conversion == 114:
            value = repr(value)
        elif conversion == 97:
            value = ascii(value)
        return safe_format(value, spec)

    def too_big_int(what: str, bits: int) -> LimitExceeded:
        return LimitExceeded(
            f"{what} would produce an integer of about {bits} bits, over the limit of "
            f"{limits.max_int_bits} bits (RLM_MAX_INT_BITS)"
        )

    def safe_pow(a: Any, b: Any, mod: Any = None) -> Any:
        if mod is None and isinstance(a, int) and isinstance(b, int) and limits.max_int_bits:
            base, exp = operator.index(a), operator.index(b)  # exact ints: subclasses cannot lie
            base_bits = abs(base).bit_length()
            if exp > 1 and base_bits > 1 and (base_bits - 1) * exp > limits.max_int_bits:
                raise too_big_int(f"{_short(base)} ** {_short(exp)}", (base_bits - 1) * exp)
        return a**b if mod is None else pow(a, b, mod)

    def safe_lshift(a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int) and limits.max_int_bits:
            value, shift = operator.index(a), operator.index(b)
            bits = abs(value).bit_length() + shift
            if value and bits > limits.max_int_bits:
                raise too_big_int(f"{_short(value)} << {_short(shift)}", bits)
        return a << b

    def repeat_check(seq: Any, times: Any) -> None:
        if isinstance(seq, (str, bytes, bytearray, list, tuple)) and hasattr(type(times), "__index__"):
            n = operator.index(times)  # what the repetition will use, even for objects defining __index__
            total = len(seq) * n
            if limits.max_sequence and total > limits.max_sequence:
                raise LimitExceeded(
                    f"repeating a {type(seq).__name__} of length {len(seq)} {n} times "
                    f"gives {total} items, over the limit of {limits.max_sequence} "
                    "(RLM_MAX_SEQUENCE)"
                )

    small = 1 << 4096 if limits.max_int_bits >= 8192 or not limits.max_int_bits else 0

    def safe_mul(a: Any, b: Any) -> Any:
        ta, tb = type(a), type(b)
        if ta is float or tb is float:
            return a * b
        if ta is int and tb is int and -small < a < small and -small < b < small:
            return a * b
        if isinstance(a, int) and isinstance(b, int):
            if limits.max_int_bits:
                bits = operator.index(a).bit_length() + operator.index(b).bit_length()
                if bits > limits.max_int_bits:
                    raise too_big_int("this multiplication", bits)
            return a * b
        repeat_check(a, b)
        repeat_check(b, a)
        return a * b

    def safe_mod(a: Any, b: Any) -> Any:
        ta = type(a)
        if ta is int or ta is float:
            return a % b
        if isinstance(a, (str, bytes)) and limits.max_format_width:
            text = a if isinstance(a, str) else a.decode("latin-1")
            args = b if isinstance(b, tuple) else (b,)
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

    _INPLACE: dict[str, Callable[[Any, Any], Any]] = {
        "+=": operator.iadd,
        "-=": operator.isub,
        "*=": lambda a, b: _imul(a, b),
        "/=": operator.itruediv,
        "%=": lambda a, b: safe_mod(a, b),
        "**=": lambda a, b: safe_pow(a, b),
        "<<=": lambda a, b: safe_lshift(a, b),
        ">>=": operator.irshift,
        "|=": operator.ior,
        "^=": operator.ixor,
        "&=": operator.iand,
        "//=": operator.ifloordiv,
        "@=": operator.imatmul,
    }

    def _imul(a: Any, b: Any) -> Any:
        if isinstance(a, (list, bytearray)) and hasattr(type(b), "__index__"):
            repeat_check(a, b)
            return operator.imul(a, b)
        return safe_mul(a, b)

    return {
        "check_spec": check_spec,
        "format": safe_format,
        "fstring_format": fstring_format,
        "pow": safe_pow,
        "lshift": safe_lshift,
        "mul": safe_mul,
        "mod": safe_mod,
        "inplace": _INPLACE,
    }


def _short(n: int) -> str:
    text = str(n) if abs(n).bit_length() < 64 else f"<{abs(n).bit_length()}-bit int>"
    return text
