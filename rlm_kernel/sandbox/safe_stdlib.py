"""Safe stand-ins for a few standard-library callables the facades serve instead of the originals.

Interruptible itertools producers, size-capped math helpers, guarded attrgetter/methodcaller. The decimal
contexts are in safe_decimal.py, the enums and `singledispatch` in safe_types.py.
"""

from __future__ import annotations

import collections
import functools
import math
import operator
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rlm_kernel.sandbox.bulk import feed
from rlm_kernel.sandbox.errors import LimitExceeded, refusal
from rlm_kernel.sandbox.keys import count_keys
from rlm_kernel.sandbox.origin import register_forwarder

__all__ = [
    "checked_normalize",
    "SafeAttrgetter",
    "SafeMethodcaller",
    "capped",
    "chain",
    "combinatoric",
    "counter_elements",
    "install_counter_chunks",
    "gcd_like",
    "count",
    "cycle",
    "interruptible",
    "prod",
    "reduce",
    "repeat",
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


_c_count_elements = collections._count_elements  # type: ignore[attr-defined]


def _count_in_chunks(mapping: Any, iterable: Iterable[Any]) -> None:
    """collections' `_count_elements` (what Counter(iterable) and Counter.update run) fed in chunks that stay
    short (bulk.feed: a 10**8-character string, or keys that share one hash value), so the time limit can
    stop counting between two C calls."""
    feed(lambda chunk: count_keys(mapping, chunk, _c_count_elements), iterable)


def install_counter_chunks() -> None:
    """Make Counter count in chunks (process-wide: the same counts, the kernel's own uses included)."""
    collections._count_elements = _count_in_chunks  # type: ignore[attr-defined]


def counter_elements(counter: Any) -> Callable[[], Iterator[Any]]:
    """Counter.elements as a Python-level loop (the C one repeats each key count times uninterruptibly)."""

    def elements() -> Iterator[Any]:
        for key, times in counter.items():
            for _ in range(operator.index(times)) if operator.index(times) > 0 else ():
                yield key

    return elements


class SafeItemgetter:
    """operator.itemgetter whose items are read through the sandbox's item guard (a costly tuple key of a
    hash table is looked up in steps there, keys.py)."""

    __slots__ = ("_items", "_getitem")

    def __init__(self, getitem: Callable[[Any, Any], Any], *items: Any) -> None:
        if not items:
            raise TypeError("itemgetter expected 1 argument, got 0")
        self._getitem = getitem
        self._items = items

    def __call__(self, obj: Any) -> Any:
        if len(self._items) == 1:
            return self._getitem(obj, self._items[0])
        return tuple(self._getitem(obj, item) for item in self._items)

    def __repr__(self) -> str:
        return f"operator.itemgetter({', '.join(map(repr, self._items))})"


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


# what it calls was chosen by whoever made it (a `display`/`update` with model code's bundle), not its caller
register_forwarder(SafeMethodcaller.__call__.__code__)


_NORMALIZE_PIECE = 1 << 18  # characters one unicodedata.normalize call handles (an NFKD piece expands 18x)
_ASCII = re.compile(r"[\x00-\x7f]")


def checked_normalize(max_items: int) -> Callable[[str, str], str]:
    """unicodedata.normalize in pieces split before ASCII characters (a starter that nothing composes with
    as a second character and that reordering never crosses, so the pieces normalise as the whole does), with
    the time limit checked between pieces and the result held to `max_items` (RLM_MAX_SEQUENCE):
    normalize('NFKD', '\ufdfa' * 10**8) is one C call of a minute that builds 1.8e9 characters."""

    def normalize(form: str, unistr: str, /) -> str:
        if type(unistr) is not str or str.__len__(unistr) <= _NORMALIZE_PIECE:
            return unicodedata.normalize(form, unistr)
        pieces: list[str] = []
        total = 0
        start, size = 0, str.__len__(unistr)
        while start < size:
            end = start + _NORMALIZE_PIECE
            if end < size:
                found = _ASCII.search(unistr, end, end + _NORMALIZE_PIECE)
                if found is None:
                    raise LimitExceeded(
                        f"unicodedata.normalize of a text with over {_NORMALIZE_PIECE} characters between "
                        "two "
                        "ASCII characters is not available in the sandbox (one C call the time limit cannot "
                        "stop); normalise it in pieces you choose"
                    )
                end = found.start()
            piece = unicodedata.normalize(form, unistr[start:end])
            total += len(piece)
            if max_items and total > max_items:
                raise LimitExceeded(
                    f"unicodedata.normalize would build a text of over {max_items} characters, over the "
                    "limit (RLM_MAX_SEQUENCE)"
                )
            pieces.append(piece)
            start = end
        return "".join(pieces)

    normalize.__doc__ = unicodedata.normalize.__doc__
    return normalize
