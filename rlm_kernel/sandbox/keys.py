"""Hash-table operations on a cell's keys that the time limit can stop: the key C is handed for one lookup or
insertion (`table_key`, `item_key`), the dict and set methods that take one key (`keyed_method`), insertion
of many keys (`insert_keys`, `insert_pairs`: displays, comprehensions, fromkeys, Counter) and the cells'
`functools.lru_cache`/`cache` (`lru_cache`, `cache`).

After a hash match CPython compares the stored key with the one looked up in one C call: two equal tuples
made separately (`(a,) * 10**5` twice, `a` a 10**7-character text) cost a minute in `d[t]`, `d[t] = v`,
`d.get(t)`, `s.add(t)` or `{t: 1}`. A costly key (a tuple or frozenset whose comparison with an equal key
is not cheap, compare.py's weights) is first looked up through compare.py's `_Probe`, whose comparisons run
in steps; C is then handed the stored key the probe matched (an identity match, no comparison), or the key
itself when no stored key shares its hash — and when some do but differ from it, only if the stepped
comparisons that told them apart were quick (C repeats them) and, when some side holds objects whose
`__eq__` is Python code (which may answer otherwise when C asks again), C's comparison is cheap whatever
they answer (`_cheap_repeat`) — else the operation is refused. Keys that are
not costly (scalars, short records, light nested tuples) go to C as they are, at the cost of a type test.
"""

from __future__ import annotations

import collections
import functools
import itertools
import time
import types
from collections.abc import Callable
from typing import Any

from rlm_kernel.sandbox.compare import _C_WORK, _NO_MATCH, _SCALARS, _SHORT, _Probe, costly_key
from rlm_kernel.sandbox.errors import LimitExceeded

__all__ = [
    "EXACT_TABLES",
    "KEY_GUARDS",
    "KEYED_NAMES",
    "cache",
    "costly_key",
    "count_keys",
    "insert_fromkeys",
    "insert_keys",
    "insert_pairs",
    "item_key",
    "keyed_method",
    "lru_cache",
    "short_records",
    "table_key",
]

# The guard names the policy emits for hashing (guards.py binds them to the session).
KEY_GUARDS = ("_wkey_", "_kattr_", "_kcall_", "_str_", "_set_comp_", "_dict_comp_", "_dict_display_")
# setops.SET_GUARDS' names, listed here for namespace.py (setops.py imports this module)
SET_GUARD_NAMES = ("_sub_", "_bitor_", "_bitand_", "_bitxor_")
_REPEAT_SECONDS = 0.05  # stepped comparisons C may repeat (it does the same work, faster)
_MAPPINGPROXY = types.MappingProxyType
_own_dict = type.__dict__["__dict__"].__get__


def _contains_of(kind: type) -> Callable[[Any, Any], Any] | None:
    """The C `__contains__` whose table a lookup in an object of `kind` reads (dict, set, frozenset, their
    subclasses — defaultdict, Counter, OrderedDict, a cell's `class S(set)` — dict keys views and
    mappingproxy), else None."""
    if kind is dict or kind is set or kind is frozenset:
        return kind.__contains__
    if kind is _MAPPINGPROXY or kind is _KEYS_VIEW:
        return lambda table, key: key in table
    for base in (dict, set, frozenset):
        if issubclass(kind, base):
            return base.__contains__
    return None


_KEYS_VIEW = type({}.keys())


class _KeyProbe(_Probe):
    """compare.py's `_Probe` that also keeps the stored keys it was compared with and told apart
    (`_others`): C compares them with the key again, which is the same quick work only when both compare
    deterministically."""

    __slots__ = ("_others",)  # underscored: a cell's __eq__ that receives the probe cannot reach it

    def __init__(self, value: tuple[Any, ...] | frozenset[Any]) -> None:
        super().__init__(value)
        self._others: list[Any] = []

    def __eq__(self, other: object) -> Any:
        equal = super().__eq__(other)
        if not equal:
            self._others.append(other)
        return equal

    __hash__ = _Probe.__hash__


_PLAIN_ITEMS = _SCALARS | {tuple, frozenset}


def _plain_kind(kind: type) -> bool:
    """`kind`'s hash and comparison are C code that gives the same answer every time (no cell's or library's
    Python `__eq__`/`__hash__`): the scalars, tuple, frozenset, and tuple subclasses that keep tuple's."""
    if kind in _PLAIN_ITEMS:
        return True
    return issubclass(kind, tuple) and kind.__eq__ is tuple.__eq__ and kind.__hash__ is tuple.__hash__


def plain_key(value: Any) -> bool:
    """`value` (nested tuples and frozensets included) is made of `_plain_kind` objects only: comparing it
    again in C repeats the stepped comparisons' work and answer (read at C speed, each distinct tuple
    once)."""
    if not _plain_kind(type(value)):
        return False
    stack, seen = [value], {id(value)}
    while stack:
        kinds = set(map(type, items := stack.pop()))
        if not kinds <= _PLAIN_ITEMS and not all(map(_plain_kind, kinds)):
            return False
        if kinds - _SCALARS:
            for item in items:
                if type(item) not in _SCALARS and id(item) not in seen:
                    seen.add(id(item))
                    stack.append(item)
    return True


def _cheap_repeat(key: Any, budget: int = _C_WORK) -> bool:
    """C's comparison of `key` with any stored key costs at most `budget` whatever Python `__eq__`s inside
    answer: its items, nested ones as often as they occur, with texts weighed by length and ints by 64-bit
    words (a comparison of texts or ints costs at most the shorter one). Stops past the budget."""
    stack, total = [key], 0
    while stack:
        items = stack.pop()
        total += len(items)
        kinds = set(map(type, items))
        if not kinds <= _SCALARS or kinds & _WEIGHED:
            for item in items:
                if isinstance(item, (str, bytes)):
                    total += len(item)
                elif isinstance(item, int):
                    total += item.bit_length() >> 6
                elif isinstance(item, (tuple, frozenset)):
                    stack.append(item)
        if total > budget:
            return False
    return True


_WEIGHED = frozenset({str, bytes, int})


def _table_len(table: Any) -> int:
    """How many keys `table` stores (the base's C `__len__` for dict and set subclasses: no cell code)."""
    for base in (dict, set, frozenset):
        if isinstance(table, base):
            return base.__len__(table)
    return len(table)


def table_key(table: Any, key: Any, contains: Callable[[Any, Any], Any]) -> Any:
    """What to hand C for `key` in `table` (see the module docstring): the stored equal key, else `key`."""
    probe = _KeyProbe(key)
    start = time.perf_counter()
    contains(table, probe)
    matched = probe.match is not _NO_MATCH
    if not matched and probe.calls and time.perf_counter() - start > _REPEAT_SECONDS:
        raise LimitExceeded(
            f"this key hashes like {probe.calls} stored key(s) that equal it for a long stretch and then "
            "differ: C would compare them again in one call the time limit cannot stop; key by a string or "
            "id() instead"
        )
    handed = probe.match if matched else key
    plain = plain_key(handed)
    if not plain and not _cheap_repeat(handed, _C_WORK // max(1, _table_len(table))):
        # its hash may be Python code that answers C otherwise than the probe (a cell's __hash__ that changes
        # between calls): C then walks a chain of stored keys the probe never met, comparing each in C
        raise LimitExceeded(
            "this key holds objects whose hash or comparison is Python code: C would hash it again and "
            "compare it with stored keys the stepped lookup did not meet, in one call the time limit cannot "
            "stop; key by a string or id() instead"
        )
    others = probe._others
    if others and not _cheap_repeat(handed) and not (plain and all(map(plain_key, others))):
        # an __eq__ written in Python (a cell's class) may answer differently when C asks again, and C's
        # comparison would then run on through the equal rest of the keys in one call
        raise LimitExceeded(
            "this key hashes like a stored key it differs from, and they hold objects whose comparison is "
            "Python code: C would compare them again in one call the time limit cannot stop; key by a string "
            "or id() instead"
        )
    return handed


def item_key(table: Any, key: Any) -> Any:
    """The key for `table[key]`, `table[key] = v`, `del table[key]` (the `_getitem_` and `_wkey_` guards):
    `key` itself unless `table` is a C hash table and `key` is costly."""
    kind = type(key)
    if kind is tuple:
        if len(key) <= _SHORT:
            for item in key:
                if type(item) not in _SCALARS:
                    break
            else:
                return key  # a short record of scalars (the common key): cheap to hash and compare
    elif kind is not frozenset and not issubclass(kind, tuple):
        return key
    contains = _contains_of(type(table))
    if contains is None or not costly_key(key):
        return key
    return table_key(table, key, contains)


def _hashed_key(table: Any, key: Any) -> Any:
    kind = type(key)
    if kind is not tuple and kind is not frozenset and not issubclass(kind, tuple):
        return key
    if not costly_key(key):
        return key
    contains = _contains_of(type(table))
    return key if contains is None else table_key(table, key, contains)


# -- methods with one key ------------------------------------------------------------------------------------
def _one_key(method: Callable[..., Any], table: Any) -> Callable[..., Any]:
    def call(key: Any, /, *rest: Any, **options: Any) -> Any:
        kind = type(key)
        if kind is tuple or kind is frozenset or issubclass(kind, tuple):
            key = _hashed_key(table, key)
        return method(key, *rest, **options)  # options: move_to_end's `last`

    call.__name__ = call.__qualname__ = getattr(method, "__name__", "method")
    call.__doc__ = getattr(method, "__doc__", None)
    return call


_DICT_KEYED = frozenset({"get", "pop", "setdefault", "__contains__"})
_ODICT_KEYED = frozenset({"pop", "setdefault", "move_to_end"})  # OrderedDict's own C methods
_SET_KEYED = frozenset({"add", "discard", "remove", "__contains__"})
# `remove` is compare.py's too
KEYED_NAMES = frozenset({"get", "pop", "setdefault", "add", "discard", "move_to_end"})
_KEYED_BASES = (
    (collections.OrderedDict, _ODICT_KEYED),
    (dict, _DICT_KEYED),
    (set, _SET_KEYED),
    (frozenset, _SET_KEYED),
)


def _keyed_base(kind: type, name: str) -> type | None:
    """OrderedDict, dict, set or frozenset when `kind`'s method `name` is that base's C method, else None."""
    for base, names in _KEYED_BASES:
        if name in names and issubclass(kind, base):
            for cls in kind.__mro__:
                if cls is base:
                    return base
                if name in _own_dict(cls):
                    return None
    return None


def keyed_method(obj: Any, name: str) -> Callable[..., Any] | None:
    """`d.get/pop/setdefault`, `s.add/discard/remove` whose key is looked up through `table_key` (bound, or
    unbound when `obj` is the class: `dict.get(d, k)`), else None (the real attribute serves)."""
    if isinstance(obj, type):
        base = _keyed_base(obj, name)
        if base is None:
            return None
        unbound = getattr(base, name)

        def call(self: Any, /, *args: Any, **options: Any) -> Any:
            if not isinstance(self, base) or not args:
                return unbound(self, *args, **options)  # the descriptor's own TypeError
            return _one_key(unbound.__get__(self), self)(*args, **options)

        call.__name__ = call.__qualname__ = name
        return call
    base = _keyed_base(type(obj), name)
    if base is None:
        return None
    return _one_key(getattr(base, name).__get__(obj), obj)


_DICT_METHODS = {name: getattr(dict, name) for name in ("get", "pop", "setdefault")}
_SET_METHODS = {name: getattr(set, name) for name in ("add", "discard")}
EXACT_TABLES: dict[type, dict[str, Any]] = {
    dict: _DICT_METHODS,
    collections.defaultdict: _DICT_METHODS,
    collections.Counter: _DICT_METHODS,
    collections.OrderedDict: {
        name: getattr(collections.OrderedDict, name) for name in (*_DICT_METHODS, "move_to_end")
    },
    set: _SET_METHODS,
}


# -- many keys -----------------------------------------------------------------------------------------------
def _has_costly(keys: list[Any]) -> bool:
    """Some of `keys` are costly (`costly_key`); short records of scalars are recognised at C speed."""
    kinds = set(map(type, keys))
    if tuple not in kinds and frozenset not in kinds and not any(issubclass(k, tuple) for k in kinds):
        return False
    if kinds == {tuple}:
        tuples, others = keys, []
    else:
        tuples = [k for k in keys if type(k) is tuple]
        others = [k for k in keys if type(k) is not tuple and (type(k) is frozenset or isinstance(k, tuple))]
    if tuples and not short_records(tuples):
        others.extend(tuples)
    return any(map(costly_key, others))


def short_records(tuples: list[tuple[Any, ...]]) -> bool:
    """Every one of `tuples` (exact tuples) is a short record of scalars (read at C speed)."""
    if max(map(len, tuples)) > _SHORT:
        return False
    return set(map(type, itertools.chain.from_iterable(tuples))) <= _SCALARS


def insert_keys(target: Any, keys: list[Any]) -> None:
    """`target.update(keys)` for a set (or `dict.fromkeys`-style insertion through `add`), with costly keys
    inserted one by one through `table_key` (the others in one C call)."""
    if not _has_costly(keys):
        target.update(keys)
        return
    contains = _contains_of(type(target))
    assert contains is not None
    add = target.add
    for key in keys:
        if (type(key) is frozenset or isinstance(key, tuple)) and costly_key(key):
            key = table_key(target, key, contains)
        add(key)


def insert_pairs(target: dict[Any, Any], pairs: list[tuple[Any, Any]]) -> None:
    """`target.update(pairs)` with costly keys set one by one through `table_key` (the stored equal key
    keeps its place and takes the new value, as C does)."""
    keys = [pair[0] for pair in pairs]
    if not _has_costly(keys):
        target.update(pairs)
        return
    contains = _contains_of(type(target))
    assert contains is not None
    for key, value in pairs:
        if (type(key) is frozenset or isinstance(key, tuple)) and costly_key(key):
            key = table_key(target, key, contains)
        target[key] = value


def insert_fromkeys(target: dict[Any, Any], keys: list[Any], value: Any) -> None:
    """`target.update(dict.fromkeys(keys, value))`, costly keys one by one (`insert_pairs`)."""
    if not _has_costly(keys):
        target.update(dict.fromkeys(keys, value))
        return
    insert_pairs(target, [(key, value) for key in keys])


def count_keys(mapping: Any, items: list[Any], c_count: Callable[[Any, list[Any]], None]) -> None:
    """collections._count_elements(mapping, items) (`c_count`, the C one), costly keys counted one by one
    through `table_key` (`mapping[k] = mapping.get(k, 0) + 1`, as collections.py's own version does)."""
    if not _has_costly(items):
        c_count(mapping, items)
        return
    get = mapping.get
    contains = _contains_of(type(mapping))
    for item in items:
        if contains is not None and (type(item) is frozenset or isinstance(item, tuple)) and costly_key(item):
            item = table_key(mapping, item, contains)
        mapping[item] = get(item, 0) + 1


# -- functools.lru_cache / cache ------------------------------------------------------------------------
def _cached(wrapper: Any) -> Callable[..., Any]:
    """A C lru_cache wrapper whose cache keys (tuples of the arguments) compare cheaply: each costly argument
    (a tuple or frozenset whose comparison is long) is replaced by the equal one seen first, found through
    `table_key` in `seen`, so C compares identical objects; `seen` keeps those arguments (as the cache does)
    until `cache_clear()`."""
    seen: dict[Any, None] = {}

    def canon(value: Any) -> Any:
        kind = type(value)
        if kind is not tuple and kind is not frozenset and not issubclass(kind, tuple):
            return value
        if not costly_key(value):
            return value
        key = table_key(seen, value, dict.__contains__)
        seen.setdefault(key)
        return key

    def call(*args: Any, **kwargs: Any) -> Any:
        for arg in args:
            kind = type(arg)
            if kind is tuple or kind is frozenset or issubclass(kind, tuple):
                args = tuple(map(canon, args))
                break
        if kwargs:
            kwargs = {name: canon(value) for name, value in kwargs.items()}
        return wrapper(*args, **kwargs)

    def cache_clear() -> None:
        seen.clear()
        wrapper.cache_clear()

    functools.update_wrapper(call, wrapper)
    call.cache_info = wrapper.cache_info  # type: ignore[attr-defined]
    call.cache_clear = cache_clear  # type: ignore[attr-defined]
    call.cache_parameters = wrapper.cache_parameters  # type: ignore[attr-defined]
    return call


def lru_cache(maxsize: Any = 128, typed: bool = False) -> Any:
    """functools.lru_cache whose argument comparisons the time limit can stop (`_cached`)."""
    if callable(maxsize) and isinstance(typed, bool):
        return _cached(functools.lru_cache(128, typed)(maxsize))  # @lru_cache without arguments
    decorate = functools.lru_cache(maxsize, typed)
    return lambda user_function: _cached(decorate(user_function))


def cache(user_function: Callable[..., Any], /) -> Callable[..., Any]:
    """functools.cache whose argument comparisons the time limit can stop (`_cached`)."""
    return _cached(functools.lru_cache(maxsize=None)(user_function))


lru_cache.__doc__ = functools.lru_cache.__doc__
cache.__doc__ = functools.cache.__doc__
