"""Comparisons, searches and hashes of containers that the time limit can stop: `checked_compare`,
`checked_contains`, `search_method`/`super_method` (the methods the guards hand out), `count_of`/`index_of`
and `checked_hash`.

`[a] * 10**5 == [b] * 10**5` with two equal 10**7-character strings is one C loop of 10**5 memcmp calls (36 s;
`in`, `.count`, `.index`, `.remove`, `<` and `!=` alike), and a tuple nested with sharing (`t = (t,) * 10`
twelve times) hashes or compares 10**13 leaves. The cell's timers only raise between bytecodes, so these
run here in steps: a comparison of two plain scalars, or of lists whose items are all cheap to compare
(ordering.comparison_weight), stays one C call; otherwise the items are compared in chunks of `_CHUNK`, a
chunk in C when its items are cheap, else item by item in Python (recursing for nested lists), with the
identity shortcut CPython uses (`x is y` counts as equal), so results equal the builtins'.

The steps key on the class: lists, tuples, dicts, OrderedDicts and deques, and any subclass that inherits
the base's C method (`_inherited`, read from the classes' own `__dict__`), against any object of the same
base; a search weighs the value once (`value_weight`); sets, dict keys and items views whose tuples are
costly to compare look each item up through a `_Probe` (the tuple's hash, a stepped `__eq__`, the stored key
it matched); keys.py (dict and set keys) and setops.py (set algebra) build on it. `hash_work_check` refuses
tuples whose C hash would not end soon (nested with sharing, or deeper than `HASH_DEPTH`).
"""

from __future__ import annotations

import collections
import itertools
import operator
import time
from collections.abc import Callable, Iterable
from typing import Any

from rlm_kernel.sandbox.errors import LimitExceeded
from rlm_kernel.sandbox.weight import _flat_weight, comparison_weight

__all__ = [
    "CHEAP_KEY",
    "COMPARE_GUARDS",
    "HASH_BUDGET",
    "HASH_DEPTH",
    "SEARCH_METHODS",
    "checked_compare",
    "checked_contains",
    "checked_hash",
    "costly_key",
    "count_of",
    "hash_work_check",
    "index_of",
    "search_method",
    "super_method",
    "value_weight",
]

_SCALARS = frozenset({int, float, str, bytes, bool, type(None), complex})
_SEQUENCES = (list, tuple)
_HASHED = frozenset({set, frozenset, dict})
_SETS = (set, frozenset)
_CHUNK = 1024  # items compared in one C call when they are cheap
_C_WORK = 1 << 22  # items x weight allowed in one C call (a few milliseconds of memcmp)
HASH_BUDGET = 1 << 22  # leaves one hash of a nested tuple may visit (~0.1 s in C)

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _cheap(left: list[Any] | tuple[Any, ...], right: list[Any] | tuple[Any, ...]) -> bool:
    """True if comparing `left` and `right` item by item in one C call stays short."""
    n = min(len(left), len(right))
    if n == 0:
        return True
    wl = comparison_weight(left if type(left) is list else list(left))
    if wl is not None and n * wl <= _C_WORK:
        return True  # one side's items are cheap: so is every pair (the cost is the smaller item's)
    wr = comparison_weight(right if type(right) is list else list(right))
    if wr is None:
        return False
    return n * (wr if wl is None else min(wl, wr)) <= _C_WORK


def _same(x: Any, y: Any) -> bool:
    """PyObject_RichCompareBool(x, y, Py_EQ): identity counts as equal. Deep nesting (the steps take about
    three Python frames a level where C takes one) finishes in C, as Python's own comparison would."""
    if x is y:
        return True
    try:
        return bool(checked_compare("==", x, y))
    except RecursionError:
        return bool(x == y)


def _first_difference(a: Any, b: Any) -> int:
    """The first index where a and b differ (by `_same`), or min(len) when none does."""
    n = min(len(a), len(b))
    for start in range(0, n, _CHUNK):
        ca, cb = a[start : start + _CHUNK], b[start : start + _CHUNK]
        if _cheap(ca, cb):
            if ca == cb:  # C: the chunks are cheap to compare (identity shortcut included)
                continue
            for i in range(len(ca)):
                x, y = ca[i], cb[i]
                if not (x is y or x == y):
                    return start + i
            continue  # pragma: no cover - == found a difference, so a pair differs
        for i in range(min(len(ca), len(cb))):
            if not _same(ca[i], cb[i]):
                return start + i
    return n


_DUNDERS = {"==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
_REFLECTED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_ODICT, _DEQUE = collections.OrderedDict, collections.deque
# The C containers whose comparisons and searches run here in steps; OrderedDict before dict (its own
# comparison also checks the order of the keys).
_BASES = (list, tuple, _ODICT, dict, _DEQUE)
_MAPPINGS = (dict, _ODICT)
_own_dict = type.__dict__["__dict__"].__get__


def _inherited(kind: type, name: str) -> type | None:
    """The base of `_BASES` whose C method `name` instances of `kind` use (`kind` itself, or a subclass —
    a cell's `class L(list)`, defaultdict — that does not define `name` before that base in its MRO), else
    None. Read from the classes' own `__dict__` only: no attribute lookup that could run a cell's code."""
    for base in _BASES:
        if kind is base:
            return base
    for base in _BASES:
        if issubclass(kind, base):
            for cls in kind.__mro__:
                if cls is base:
                    return base
                if name in _own_dict(cls):
                    return None
    return None


def _base(kind: type, op: str) -> type | None:
    return _inherited(kind, _DUNDERS[op])


def _stored(obj: Any, base: type) -> Any:
    """The items `base`'s C code compares, as an exact list/tuple (no __iter__ of a list or tuple subclass
    runs; deques iterate as their C comparison does)."""
    kind = type(obj)
    if base is list:
        return obj if kind is list else list.copy(obj)
    if base is tuple:
        return obj if kind is tuple else tuple.__getitem__(obj, slice(None))
    return list(_DEQUE.__iter__(obj))


class _Probe:
    """A stand-in for a tuple (or a frozenset of costly tuples) looked up in a set or dict: the same hash,
    and an `__eq__` that compares in steps. C's lookup compares the stored key with it; the tuple's
    comparison gives NotImplemented, so this `__eq__` answers (Python code, where the time limit can stop
    it). It records the stored key it matched (`match`, else `_NO_MATCH`) and how many stored keys with its
    hash it was compared with (`calls`): keys.py hands C the stored key itself (an identity match), or the
    value when no stored key shares its hash."""

    __slots__ = ("value", "hashed", "match", "calls")

    def __init__(self, value: tuple[Any, ...] | frozenset[Any]) -> None:
        hash_work_check(value)
        self.value, self.hashed = value, hash(value)
        self.match: Any = _NO_MATCH
        self.calls = 0

    def __hash__(self) -> int:
        return self.hashed

    def __eq__(self, other: object) -> Any:
        self.calls += 1
        if other is self.value:
            self.match = other
            return True
        equal = checked_compare("==", self.value, other)
        if equal:
            self.match = other
        return equal


_NO_MATCH = object()


def _costly_keys(keys: list[Any]) -> bool:
    """Some of `keys` are tuples whose comparison with an equal stored key is not cheap (measured at C
    speed: tuples that hold containers, or long texts shared by many keys)."""
    if tuple not in set(map(type, keys)):
        return False
    tuples = [k for k in keys if type(k) is tuple]
    weight = comparison_weight(tuples)
    return weight is None or weight * len(tuples) > _C_WORK


def _flat_record(value: tuple[Any, ...]) -> bool:
    """A short tuple of scalars: hashing and comparing it is cheap."""
    if len(value) > _SHORT:
        return False
    for item in value:
        if type(item) not in _SCALARS:
            return False
    return True


def _light_nested(value: tuple[Any, ...], budget: int = 64) -> bool:
    """A tuple holding, nested tuples included, at most `budget` small scalars (`((1, 2), ('a', 3))`):
    hashing it, and comparing it with any stored key, is cheap (a comparison stops within its items)."""
    stack, left = [value], budget
    while stack:
        for item in stack.pop():
            left -= 1
            if left < 0:
                return False
            if type(item) is tuple:
                stack.append(item)
            elif not _small(item):
                return False
    return True


def costly_key(key: Any) -> bool:
    """`key` is a tuple (or tuple subclass) or frozenset whose hash or comparison with an equal stored key may
    be one long C call. Refuses (LimitExceeded) tuples whose hash alone would be (nested with sharing, or
    deeper than compare.HASH_DEPTH)."""
    kind = type(key)
    if kind is frozenset:
        return _costly_keys(list(key))
    if kind is not tuple and not issubclass(kind, tuple):
        return False
    if len(key) <= _SHORT:
        for item in key:
            if type(item) not in _SCALARS:
                break
        else:
            return False  # a short record of scalars: bounded by its own size
    if _light_nested(key):
        return False
    hash_work_check(key)
    items = list(tuple.__getitem__(key, slice(None)))
    weight = _flat_weight(set(map(type, items)), items)  # None: nested tuples or other types
    return weight is None or weight * len(items) > _C_WORK


def _key(value: Any) -> Any:
    """What to look `value` up with: a `_Probe` for a tuple, or a frozenset holding costly tuples (its
    comparison with an equal stored frozenset is a C loop of tuple comparisons), else the value itself."""
    kind = type(value)
    if kind is tuple or (kind is frozenset and _costly_keys(list(value))):
        return _Probe(value)
    return value


def _sets_compare(op: str, a: Any, b: Any, cheap: bool = False) -> Any:
    """`a <op> b` for two sets, frozensets or dict items views whose items are costly to compare: the
    membership of each item in steps (set equality and inclusion are these lookups in C): a `_Probe` for a
    tuple in a set, `checked_contains` for an item of a view. `cheap`: the items are cheap but many share a
    hash, so the lookups go in C over chunks timed to stay short."""
    if op in (">", ">="):
        return _sets_compare("<" if op == ">" else "<=", b, a, cheap)
    views = type(b) in _ITEMS_VIEWS
    na, nb = _set_len(a), _set_len(b)
    has = _set_has(b)
    if op in ("==", "!="):
        if na != nb:
            return op == "!="
        if cheap:
            return _all_in(has, _set_iter(a)) is (op == "==")
        equal = all(checked_contains(x, b) if views else has(_key(x)) for x in _set_iter(a))
        return equal is (op == "==")
    if na > nb or (op == "<" and na == nb):
        return False
    if cheap:
        return _all_in(has, _set_iter(a))
    return all(checked_contains(x, b) if views else has(_key(x)) for x in _set_iter(a))


_SET_PAIRS = 1 << 24  # lookups x chain length one C comparison of sets may cost (setops._C_PAIRS)


def _all_in(has: Callable[[Any], bool], items: Iterable[Any]) -> bool:
    """all(map(has, items)) in chunks whose size follows their time (as bulk.feed), so one C call stays
    short even when every lookup walks a chain of keys sharing one hash."""
    it = iter(items)
    size = 4096
    clock = time.perf_counter
    while chunk := list(itertools.islice(it, size)):
        start = clock()
        if not all(map(has, chunk)):
            return False
        spent = clock() - start
        if spent > 0.02:
            size = max(1, size // 8)
        elif spent < 0.002 and size < 1 << 16:
            size *= 2
    return True


def _set_base(kind: type) -> type | None:
    """set or frozenset for those classes and subclasses that keep their C methods (a cell's `class
    S(set)`: its comparison is set's, on the stored items), else None."""
    for base in _SETS:
        if issubclass(kind, base):
            for cls in kind.__mro__:
                if cls is base:
                    return base
                if any(name in _own_dict(cls) for name in _SET_METHODS):
                    return None
    return None


_SET_METHODS = (*_DUNDERS.values(), "__len__", "__iter__", "__contains__")


def _set_len(x: Any) -> int:
    base = _set_base(type(x))
    return len(x) if base is None else base.__len__(x)


def _set_iter(x: Any) -> Any:
    base = _set_base(type(x))
    return iter(x) if base is None else base.__iter__(x)


def _set_has(x: Any) -> Callable[[Any], bool]:
    base = _set_base(type(x))
    return x.__contains__ if base is None else lambda key: base.__contains__(x, key)


def _costly_items(a: Any) -> bool:
    """A dict items view whose values or keys are costly to compare."""
    mapping = a.mapping
    values = list(mapping.values())
    weight = comparison_weight(values)
    return weight is None or weight * len(values) > _C_WORK or _costly_keys(list(mapping.keys()))


def _dicts_equal(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    """`a == b` for dicts, in steps when the values are costly to compare: the keys are matched in C
    (hashes are stored; a costly tuple key is refused by its hash budget), the values one by one."""
    if dict.__len__(a) != dict.__len__(b):  # the stored sizes: a subclass's own __len__ is not the dict's
        return False
    values = list(dict.values(a))
    weight = comparison_weight(values)
    costly_keys = _costly_keys(list(dict.keys(a)))
    if weight is not None and len(values) * weight <= _C_WORK and not costly_keys:
        return dict.__eq__(a, b) is True
    other = dict.get
    missing = object()
    for key, value in dict.items(a):
        theirs = other(b, _key(key), missing)
        if theirs is missing or not _same(value, theirs):
            return False
    return True


def _odicts_equal(a: Any, b: Any) -> bool:
    """OrderedDict == OrderedDict: the dicts equal and the keys in the same order (odict_richcompare)."""
    return _dicts_equal(a, b) and _same(list(_ODICT.keys(a)), list(_ODICT.keys(b)))


def base_compare(op: str, base: type, a: Any, b: Any) -> Any:
    """`base.__<op>__(a, b)`: compare as `base`'s C code does, on the stored items, whatever a's own class
    defines (what `super().__eq__(other)` in a cell's subclass calls); NotImplemented as the C slot gives."""
    if not isinstance(b, base) or (base is dict and isinstance(b, _DEQUE)):
        return NotImplemented
    if base in (dict, _ODICT):
        if op not in ("==", "!="):
            return NotImplemented
        ordered = base is _ODICT and isinstance(b, _ODICT)
        equal = _odicts_equal(a, b) if ordered else _dicts_equal(a, b)
        return equal is (op == "==")
    return _compare_plain(op, _stored(a, base), _stored(b, base))


def checked_compare(op: str, a: Any, b: Any) -> Any:
    """`a <op> b` (==, !=, <, <=, >, >=) with the same result, in steps when a and b are lists, tuples,
    dicts or deques (or subclasses that keep the base's comparison: defaultdict, OrderedDict, a cell's
    `class L(list)`) whose items are costly to compare (see the module docstring)."""
    ta, tb = type(a), type(b)
    if ta in _SCALARS or tb in _SCALARS or a is b:
        return _OPS[op](a, b)
    base = _base(ta, op)
    if base is None:
        set_like = ta in _SET_LIKE or _set_base(ta) is not None
        if set_like and (tb in _SET_LIKE or _set_base(tb) is not None):
            items = list(_set_iter(a))
            if _costly_keys(items):
                return _sets_compare(op, a, b)  # sets, subclasses keeping set's methods, keys views
            na, nb = len(items), _set_len(b)
            if (na + nb) * max(na, nb) > _SET_PAIRS:
                return _sets_compare(op, a, b, cheap=True)  # keys sharing one hash: chains of all the others
        items_a, items_b = ta in _ITEMS_VIEWS, tb in _ITEMS_VIEWS
        if (items_a or set_like) and (items_b or tb in _SET_LIKE or _set_base(tb) is not None):
            # an items view against another items view, a set or a keys view: compared as sets
            if (items_a and _costly_items(a)) or (items_b and _costly_items(b)):
                return _sets_compare(op, a, b)
        return _OPS[op](a, b)
    other = base if tb is ta else _base(tb, _REFLECTED[op])
    if other is not base and not (base in _MAPPINGS and other in _MAPPINGS):
        return _OPS[op](a, b)  # a class of its own, or different bases (cheap: NotImplemented)
    if base in _MAPPINGS:
        if op not in ("==", "!="):
            return _OPS[op](a, b)  # dicts are not ordered: the TypeError comes at once
        # OrderedDict's order counts only between two OrderedDicts
        equal = _odicts_equal(a, b) if base is other is _ODICT else _dicts_equal(a, b)
        return equal is (op == "==")
    return _compare_plain(op, _stored(a, base), _stored(b, base))


def _compare_plain(op: str, a: Any, b: Any) -> Any:
    """`a <op> b` for two exact lists or two exact tuples, in steps when their items are costly."""
    if type(a) is not type(b):
        return _OPS[op](a, b)
    if op in ("==", "!=") and len(a) != len(b):
        return op == "!="
    if _cheap(a, b):
        return _OPS[op](a, b)
    i = _first_difference(a, b)
    if i >= min(len(a), len(b)):
        return _OPS[op](len(a), len(b))
    if op == "==":
        return False
    if op == "!=":
        return True
    return checked_compare(op, a[i], b[i])


def _small(value: Any) -> bool:
    """A scalar every comparison with is cheap whatever the other item (texts compare lengths first)."""
    kind = type(value)
    if kind in (str, bytes):
        return len(value) <= 64
    return kind in _SCALARS and (kind is not int or value.bit_length() <= 4096)


_LIGHT_LEN = 64  # items of a list or tuple weighed as a search's value (a record, a short row)


def value_weight(value: Any) -> int | None:
    """What one comparison of `value` with any item can cost at most, or None when it cannot be told cheaply:
    scalars, flat tuples and short lists of them (a comparison with a flat value stops at its end, and a
    text or an int compares lengths first, so the cost is bounded by the value's own weight)."""
    kind = type(value)
    if kind in _SCALARS:
        return comparison_weight([value]) if kind is not complex else 1
    if kind is tuple:
        return comparison_weight([value]) if len(value) <= _LIGHT_LEN else None
    if kind is list and len(value) <= _LIGHT_LEN:
        weight = comparison_weight(value)
        return None if weight is None else weight * (len(value) + 1)
    return None


def _index_of(seq: Any, value: Any, start: int = 0, stop: int | None = None) -> int:
    """The first index in seq[start:stop] (an exact list or tuple) whose item equals value (item on the
    left, as CPython), or -1. The value is weighed once: when that bounds every comparison, C searches
    runs of items that stay short; otherwise chunks are weighed, item by item in Python when costly."""
    n = len(seq)
    stop = n if stop is None else stop
    w = value_weight(value)
    if w is not None:
        step = max(1, _SEARCH_WORK // w)
        for begin in range(start, stop, step):
            try:
                return seq.index(value, begin, min(begin + step, stop))  # C: each comparison is cheap
            except ValueError:
                continue
        return -1
    for begin in range(start, stop, _CHUNK):
        end = min(begin + _CHUNK, stop)
        chunk = seq[begin:end]
        if type(chunk) is not list:
            chunk = list(chunk)
        for i, item in enumerate(chunk):
            if item is value or bool(checked_compare("==", item, value)):
                return begin + i
    return -1


_SEARCH_WORK = 1 << 26  # value weight x items one C search may handle (~0.05 s of memcmp)


def _iter_index(items: Iterable[Any], value: Any) -> int:
    """The first position in an iterable whose item equals value, or -1: in chunks (`_index_of`)."""
    it = iter(items)
    done = 0
    while True:
        chunk = list(itertools.islice(it, _CHUNK))
        if not chunk:
            return -1
        found = _index_of(chunk, value)
        if found >= 0:
            return done + found
        done += len(chunk)


def _bounds(n: int, start: Any, stop: Any) -> tuple[int, int]:
    start, stop, _ = slice(start, stop).indices(n)
    return start, stop


_ITEMS_VIEWS = (type({}.items()), type(collections.OrderedDict().items()))
_SEARCHED = (list, tuple, _DEQUE)


def checked_contains(value: Any, container: Any) -> bool:
    """`value in container`, in steps for lists, tuples and deques (their subclasses that keep the base's
    `__contains__` included), dict items views, and anything searched by iteration (iterators, generators,
    dict.values(), classes without `__contains__`); the other containers answer themselves."""
    kind = type(container)
    hashed = _hash_lookup(kind)
    if hashed or kind in (str, bytes, range):
        vk = type(value)
        if vk is tuple and len(value) <= _SHORT:
            if value is CHEAP_KEY[0]:
                return value in container
            for item in value:
                if type(item) not in _SCALARS:
                    break
            else:
                CHEAP_KEY[0] = value
                return value in container  # a short record of scalars
        if hashed and (vk is tuple or vk is frozenset or issubclass(vk, tuple)) and costly_key(value):
            # a lookup whose key comparison is stepped (frozenset == frozenset looks up its tuples in C)
            return _Probe(value) in container
        return value in container
    if _small(value):
        return value in container
    if kind in _ITEMS_VIEWS:
        if type(value) is not tuple or len(value) != 2:
            return value in container  # False, as the C view answers
        key = value[0]
        kk = type(key)
        if (kk is tuple or kk is frozenset or issubclass(kk, tuple)) and costly_key(key):
            key = _Probe(key)  # the key's comparison in steps (its hash computed once, here)
        theirs = container.mapping.get(key, _MISSING)  # a hash lookup (TypeError if unhashable)
        return theirs is not _MISSING and _same(theirs, value[1])
    base = _inherited(kind, "__contains__")
    if base in _SEARCHED:
        if base is _DEQUE:
            return _iter_index(_DEQUE.__iter__(container), value) >= 0
        return _index_of(_stored(container, base), value) >= 0
    if base is not None or _has(kind, "__contains__"):
        return value in container  # a class's own __contains__ (Python code, or a hash lookup)
    if not _has(kind, "__iter__"):
        return value in container  # the __getitem__ protocol, or C's TypeError
    return _iter_index(container, value) >= 0


_MISSING = object()
# The last tuple found to be a short record of scalars (tuples are immutable, and holding it keeps its id
# from being reused): the guards that check a key skip the item loop when they see it again (`d[k] = v`,
# `d[k]`, `k in d`, `d.get(k)` in one loop body check k once).
CHEAP_KEY: list[Any] = [()]
_KEYS_VIEWS = (type({}.keys()), type(collections.OrderedDict().keys()))
_SET_LIKE = (*_SETS, *_KEYS_VIEWS)  # compared as sets: `d1.keys() == d2.keys()`, `s <= d.keys()`


def _hash_lookup(kind: type) -> bool:
    """`in` is a C hash lookup: sets, frozensets, dicts, their subclasses that keep the base's `__contains__`
    (defaultdict, Counter, OrderedDict, a cell's `class S(set)`) and dict keys views. A tuple key is then
    compared, after a hash match, in one C call (read from the classes' own `__dict__` only)."""
    if kind in _HASHED or kind in _KEYS_VIEWS:
        return True
    for base in _HASHED:
        if issubclass(kind, base):
            for cls in kind.__mro__:
                if cls is base:
                    return True
                if "__contains__" in _own_dict(cls):
                    return False
    return False


def _has(kind: type, name: str) -> bool:
    """`name` is defined on `kind` or a class of its MRO (read from the classes' own `__dict__`)."""
    return any(name in _own_dict(cls) for cls in kind.__mro__)


def count_of(items: Any, value: Any) -> int:
    """operator.countOf(items, value) (identity or equality) in steps."""
    kind = type(items)
    base = _inherited(kind, "__iter__")
    plain = _stored(items, base) if base in (list, tuple) else None
    total = 0
    if plain is not None:
        i = 0
        while (found := _index_of(plain, value, i)) >= 0:
            total += 1
            i = found + 1
        return total
    it = iter(items)
    while chunk := list(itertools.islice(it, _CHUNK)):
        i = 0
        while (found := _index_of(chunk, value, i)) >= 0:
            total += 1
            i = found + 1
    return total


def index_of(items: Any, value: Any) -> int:
    """operator.indexOf(items, value) in steps."""
    kind = type(items)
    base = _inherited(kind, "__iter__")
    found = _index_of(_stored(items, base), value) if base in (list, tuple) else _iter_index(items, value)
    if found < 0:
        raise ValueError("sequence.index(x): x not in sequence")
    return found


def _count(seq: Any, base: type) -> Callable[[Any], int]:
    def count(value: Any, /) -> int:
        items = _stored(seq, base)
        return count_of(items, value)

    return count


def _index(seq: Any, base: type) -> Callable[..., int]:
    def index(value: Any, start: Any = 0, stop: Any = None, /) -> int:
        items = _stored(seq, base)
        begin, end = _bounds(
            len(items), operator.index(start), None if stop is None else operator.index(stop)
        )
        found = _index_of(items, value, begin, max(begin, end))
        if found < 0:
            raise ValueError(
                f"{value!r} is not in {base.__name__}"
                if base is not tuple
                else "tuple.index(x): x not in tuple"
            )
        return found

    return index


def _remove(seq: Any, base: type) -> Callable[[Any], None]:
    def remove(value: Any, /) -> None:
        items = list.copy(seq) if base is list else list(_DEQUE.__iter__(seq))
        found = _index_of(items, value)
        if found < 0:
            raise ValueError(f"{base.__name__}.remove(x): x not in {base.__name__}")
        base.__delitem__(seq, found)

    return remove


SEARCH_METHODS = frozenset({"count", "index", "remove"})
_STEPPED = {"count": _count, "index": _index, "remove": _remove}


def _stepped(obj: Any, base: type, name: str) -> Callable[..., Any] | None:
    if name == "remove" and base is tuple:
        return None
    make = _STEPPED.get(name)
    return None if make is None else make(obj, base)


def search_method(obj: Any, name: str) -> Callable[..., Any] | None:
    """The stoppable `count`/`index`/`remove` of a list, tuple or deque (or a subclass that keeps the base's
    method), bound to `obj` — or unbound when `obj` is such a class (`list.count(L, x)`) — else None (the
    real attribute serves)."""
    if isinstance(obj, type):
        base = _inherited(obj, name) if obj in _SEARCHED or issubclass(obj, _SEARCHED) else None
        if base not in _SEARCHED or name not in _STEPPED or (base is tuple and name == "remove"):
            return None
        unbound = getattr(base, name)

        def call(self: Any, /, *args: Any) -> Any:
            if not isinstance(self, base):
                return unbound(self, *args)  # the descriptor's own TypeError
            stepped = _stepped(self, base, name)
            return stepped(*args) if stepped is not None else unbound(self, *args)

        call.__name__ = call.__qualname__ = name
        return call
    base = _inherited(type(obj), name)
    if base not in _SEARCHED:
        return None
    return _stepped(obj, base, name)


_SUPER_COMPARISONS = {name: op for op, name in _DUNDERS.items()}


def super_method(proxy: super, name: str) -> Callable[..., Any] | None:
    """What `super().<name>` gives in steps when it resolves to the C comparison, `__contains__`, `count`,
    `index` or `remove` of list, tuple, dict, OrderedDict or deque (a cell's override calling the base's),
    else None (the real attribute serves)."""
    if name not in _SUPER_COMPARISONS and name != "__contains__" and name not in SEARCH_METHODS:
        return None
    this = super.__dict__["__thisclass__"].__get__(proxy)
    obj = super.__dict__["__self__"].__get__(proxy)
    if obj is None or isinstance(obj, type):
        return None
    mro = type(obj).__mro__
    if this not in mro:
        return None
    owner = next((cls for cls in mro[mro.index(this) + 1 :] if name in _own_dict(cls)), None)
    if owner not in _BASES:
        return None
    if name in _SUPER_COMPARISONS:
        op = _SUPER_COMPARISONS[name]
        return lambda other, /: base_compare(op, owner, obj, other)
    if name == "__contains__":
        if owner not in _SEARCHED:
            return None
        return lambda value, /: checked_contains(value, _stored(obj, owner))
    return _stepped(obj, owner, name)


HASH_DEPTH = 1000  # tuples nested deeper than this are not hashed (C's hash recursed until SIGSEGV)


def hash_work_check(value: Any, budget: int = HASH_BUDGET) -> None:
    """Raise LimitExceeded when hashing (or comparing) `value` would visit more than `budget` leaves — a
    tuple nested with sharing (`t = (t,) * 10` twelve times, `t = (t, t)` sixty times) costs 10**13 in one
    C call — or when tuples nest more than HASH_DEPTH deep (C's hash recursion crashed the process at
    200 000). The walk is iterative, counts each distinct tuple once (memo by id) and stops past the budget,
    so it is cheap; tuple subclasses (namedtuples) count as tuples."""
    if not isinstance(value, tuple):
        return
    kinds = set(map(type, value))
    if tuple not in kinds and not any(issubclass(kind, tuple) for kind in kinds):
        return
    memo: dict[int, int] = {}
    stack: list[list[Any]] = [[value, 0, len(value) + 1]]
    while stack:
        frame = stack[-1]
        t, begin, total = frame
        pushed = False
        for i in range(begin, len(t)):
            item = t[i]
            if not isinstance(item, tuple):
                continue
            known = memo.get(id(item))
            if known is None:
                if len(stack) >= HASH_DEPTH:
                    raise LimitExceeded(
                        f"this tuple nests tuples more than {HASH_DEPTH} deep: hashing or comparing it is "
                        "one C call that recursion would crash; use a flat tuple, or key by id() or a string"
                    )
                frame[1], frame[2] = i + 1, total
                stack.append([item, 0, len(item) + 1])
                pushed = True
                break
            total += known
            if total > budget:
                _over_budget(budget)
        if pushed:
            continue
        memo[id(t)] = total
        stack.pop()
        if stack:
            stack[-1][2] += total
            if stack[-1][2] > budget:
                _over_budget(budget)
    return


def _over_budget(budget: int) -> None:
    raise LimitExceeded(
        "hashing this tuple would visit more than "
        f"{budget} items: it nests the same tuples many times over (like t = (t,) * 10 repeated), and "
        "one hash of it cannot be stopped; use a flat tuple, or key by id() or a string"
    )


def checked_hash(value: Any, /) -> int:
    """`hash(value)`, refusing tuples nested with sharing whose hash would visit too many items."""
    hash_work_check(value)
    return hash(value)


_SHORT = 16  # items of a tuple of scalars compared in one C call without weighing (a record, a pair)


def _guard(op: str) -> Callable[[Any, Any], Any]:
    real = _OPS[op]

    def compare(a: Any, b: Any) -> Any:
        ta = type(a)
        if ta in _SCALARS or type(b) in _SCALARS:
            return real(a, b)
        if ta is tuple and len(a) <= _SHORT:
            for item in a:  # a short record of scalars: each comparison is one scalar's, at most _SHORT
                if type(item) not in _SCALARS:
                    return checked_compare(op, a, b)
            return real(a, b)
        return checked_compare(op, a, b)

    compare.__name__ = f"compare_{real.__name__}"
    return compare


def _not_in(value: Any, container: Any) -> bool:
    return not checked_contains(value, container)


# The names policy.visit_Compare calls for each operator.
COMPARE_GUARDS: dict[str, Callable[[Any, Any], Any]] = {
    "_eq_": _guard("=="),
    "_ne_": _guard("!="),
    "_lt_": _guard("<"),
    "_le_": _guard("<="),
    "_gt_": _guard(">"),
    "_ge_": _guard(">="),
    "_in_": checked_contains,
    "_not_in_": _not_in,
}
