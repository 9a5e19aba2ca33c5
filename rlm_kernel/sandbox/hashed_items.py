"""Library code that hashes a cell's values in C outside keys.py's routes: its arguments are checked first.

typing's `_tp_cache` looks its arguments up in a C lru_cache (`Literal[t]`, `Tuple[t]`, `Union[t, int]`): one
hash of a tuple nested with sharing (`t = (t, t)` forty times) is 2**40 visits the time limit cannot stop.
Each such value is checked as keys.py checks a key (`compare.hash_work_check`) and refused. Installed
process-wide (`install`): the same results for everything else, the kernel's own uses included.
(difflib's SequenceMatcher, which puts its sequences' items in dicts, has a stepped twin in library_keys.py.)
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from typing import Any

from rlm_kernel.sandbox.compare import costly_key, hash_work_check
from rlm_kernel.sandbox.errors import LimitExceeded

__all__ = ["check_items", "install"]

_FLAT = frozenset({str, bytes, bytearray})


def _refuse(what: str) -> LimitExceeded:
    return LimitExceeded(
        f"{what} hashes each item in one C call, and this item's hash or comparison with an equal one could "
        "not be stopped by the time limit (a tuple nested with sharing, or a large nested one); use strings "
        "or short tuples of scalars"
    )


def check_items(items: Iterable[Any], what: str, *, compared: bool = True) -> None:
    """Refuse (LimitExceeded) when an item of `items` is a tuple or frozenset whose hash (or, if `compared`,
    comparison with an equal one: `compare.costly_key`) is a long C call. Reads the item types at C speed;
    only tuples and frozensets are walked."""
    if type(items) in _FLAT:
        return
    items = list(items)
    kinds = set(map(type, items))
    if not any(kind is frozenset or issubclass(kind, tuple) for kind in kinds):
        return
    for item in items:
        if type(item) is frozenset or isinstance(item, tuple):
            try:
                hash_work_check(item)
                costly = compared and costly_key(item)
            except LimitExceeded:
                raise _refuse(what) from None
            if costly:
                raise _refuse(what)


def _checked_cache(cached: Callable[..., Any]) -> Callable[..., Any]:
    def lookup(*args: Any, **kwargs: Any) -> Any:
        # the arguments are types and literals (costly_key would weigh types as costly): the hash is checked
        check_items(args, "typing's subscription cache", compared=False)
        check_items(kwargs.values(), "typing's subscription cache", compared=False)
        return cached(*args, **kwargs)

    lookup.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    lookup.__wrapped__ = cached  # type: ignore[attr-defined]
    return lookup


def _tp_cache_inners() -> Iterable[Any]:
    """The wrappers `typing._tp_cache` made (each holds its C lru_cache in a closure cell `cached`)."""
    seen: set[int] = set()
    owners = [typing, *(v for v in vars(typing).values() if isinstance(v, type))]
    # Literal, Union, Optional: the cached function is the special form's `_getitem`
    forms = [v._getitem for v in vars(typing).values() if isinstance(v, typing._SpecialForm)]
    for values in [forms, *(list(vars(owner).values()) for owner in owners)]:
        for value in values:
            fn = getattr(value, "__func__", value)
            code = getattr(fn, "__code__", None)
            if code is None or id(fn) in seen or "cached" not in code.co_freevars:
                continue
            if not code.co_qualname.startswith("_tp_cache."):
                continue
            seen.add(id(fn))
            yield fn


_installed: list[bool] = []


def install() -> None:
    """Check the items typing's caches hash (process-wide, once)."""
    if _installed:
        return
    _installed.append(True)
    for fn in _tp_cache_inners():
        cell = fn.__closure__[fn.__code__.co_freevars.index("cached")]
        cell.cell_contents = _checked_cache(cell.cell_contents)
