"""Size caps on the str/bytes/bytearray methods whose result can outgrow their input: padding, tab
expansion, replacement, translation and joining (`'x'.ljust(2 * 10**9)` built a 2 GB string in one C call).

`text_method(obj, name, max_items)` is what the `_getattr_` guard hands out for these names on text objects
and text classes: the real method, checked first against `max_items` (Limits.max_sequence), so the result is
never longer than the sequence cap — the same cap as `'x' * n`.
"""

from __future__ import annotations

import collections
import operator
from collections.abc import Callable
from typing import Any

from rlm_kernel.sandbox.errors import LimitExceeded

__all__ = ["TEXT_METHODS", "text_method"]

TEXT_METHODS = frozenset({"ljust", "rjust", "center", "zfill", "expandtabs", "replace", "translate", "join"})
_TEXT_TYPES = (str, bytes, bytearray)
_PADDING = frozenset({"ljust", "rjust", "center", "zfill"})


def _length(obj: Any) -> int:
    if isinstance(obj, str):
        return str.__len__(obj)
    if isinstance(obj, collections.UserString):
        return _length(obj.data)
    return len(memoryview(obj))


def _too_long(what: str, size: int, cap: int) -> LimitExceeded:
    return LimitExceeded(
        f"{what} would build a text of {size} items, over the limit of {cap} (RLM_MAX_SEQUENCE); build it in "
        "pieces or with a smaller width"
    )


def _check(name: str, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], cap: int) -> None:
    """Refuse `obj.name(*args, **kwargs)` when its result would have more than `cap` items."""
    if name in _PADDING:
        width = args[0] if args else None
        if type(width) is int and width > cap:
            raise _too_long(f"{name}({width})", width, cap)
        return
    size = _length(obj)
    if name == "expandtabs":
        tabsize = args[0] if args else kwargs.get("tabsize", 8)
        if type(tabsize) is int and tabsize > 1:
            tabs = obj.count("\t" if isinstance(obj, str) else b"\t")
            if size + tabs * tabsize > cap:
                raise _too_long(f"expandtabs({tabsize})", size + tabs * tabsize, cap)
        return
    if name == "replace":
        if len(args) < 2:
            return
        old, new = args[0], args[1]
        if not isinstance(old, (*_TEXT_TYPES, collections.UserString)) or not isinstance(
            new, (*_TEXT_TYPES, collections.UserString)
        ):
            return  # the method raises its own TypeError
        grow = _length(new) - _length(old)
        if grow <= 0:
            return
        bound = size + (size // max(_length(old), 1) + 1) * grow
        if bound <= cap:
            return
        times = obj.count(old) if _length(old) else size + 1
        count = args[2] if len(args) > 2 else kwargs.get("count", -1)
        if type(count) is int and count >= 0:
            times = min(times, count)
        if size + times * grow > cap:
            raise _too_long("replace()", size + times * grow, cap)
        return
    if name == "translate":
        table = args[0] if args else None
        if type(table) is not dict or not isinstance(obj, str):
            return  # bytes tables map byte to byte; other mappings run Python per character
        longest = max((str.__len__(v) for v in table.values() if isinstance(v, str)), default=1)
        if longest <= 1 or size * longest <= cap:
            return
        if len(table) > 1000:
            raise _too_long("translate()", size * longest, cap)
        total = size + sum(
            obj.count(chr(k)) * (str.__len__(v) - 1)
            for k, v in table.items()
            if type(k) is int and 0 <= k < 0x110000 and isinstance(v, str) and str.__len__(v) > 1
        )
        if total > cap:
            raise _too_long("translate()", total, cap)


def _join(obj: Any, real: Callable[..., Any], cap: int) -> Callable[..., Any]:
    sep = _length(obj)

    def join(iterable: Any) -> Any:
        items = iterable if type(iterable) in (list, tuple) else list(iterable)
        if items:
            try:
                total = sum(map(len, items)) + sep * (len(items) - 1)
            except TypeError:
                total = 0  # not all sized: join raises its own error
            if total > cap:
                raise _too_long("join()", total, cap)
        return real(items)

    return join


def text_method(obj: Any, name: str, cap: int) -> Any:
    """The checked `obj.name` for text objects (str, bytes, bytearray, UserString) and the text classes
    themselves (`str.ljust`); None for anything else (the guard goes on as usual)."""
    if not cap:
        return None
    if isinstance(obj, type):
        if not issubclass(obj, (*_TEXT_TYPES, collections.UserString)):
            return None
        unbound = getattr(obj, name)

        def checked_unbound(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(self, obj):
                return unbound(self, *args, **kwargs)  # the method raises its own TypeError
            return text_method(self, name, cap)(*args, **kwargs)

        checked_unbound.__name__ = checked_unbound.__qualname__ = name
        return checked_unbound
    if not isinstance(obj, (*_TEXT_TYPES, collections.UserString)):
        return None
    real = getattr(obj, name)
    if name == "join":
        return _join(obj, real, cap)

    def checked(*args: Any, **kwargs: Any) -> Any:
        if name in _PADDING and args and type(args[0]) is not int and hasattr(type(args[0]), "__index__"):
            args = (operator.index(args[0]), *args[1:])  # read an __index__ object once: checked = used
        _check(name, obj, args, kwargs, cap)
        return real(*args, **kwargs)

    checked.__name__ = checked.__qualname__ = name
    return checked
