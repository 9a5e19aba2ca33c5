"""The stoppable comparisons and searches of compare.py give what the builtins give (random nested lists and
tuples, NaN, shared items, mixed types), and the hash budget refuses only tuples nested with sharing."""

from __future__ import annotations

import collections
import functools
import math
import operator
import random
from typing import Any

import pytest

from rlm_kernel.sandbox.compare import (
    checked_compare,
    checked_contains,
    checked_hash,
    count_of,
    index_of,
    search_method,
    super_method,
)
from rlm_kernel.sandbox.errors import LimitExceeded

_NAN = float("nan")
_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt}


class _List(list):
    """A cell's subclass that keeps list's comparison."""


class _Tuple(tuple):
    __slots__ = ()


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 2 or roll < 0.5:
        return rng.choice([0, 1, 2, 1.0, True, _NAN, "a", "b", "x" * 70 + "a", "x" * 70 + "b", None, b"z"])
    items = [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if roll < 0.62:
        return items
    if roll < 0.7:
        return _List(items)
    if roll < 0.82:
        return tuple(items)
    if roll < 0.88:
        return _Tuple(items)
    return {rng.choice([0, 1, "k", 2.0]): item for item in items}


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return ("ok", fn(*args))
    except TypeError:
        return ("TypeError",)
    except ValueError:
        return ("ValueError",)


def test_comparisons_give_what_the_builtins_give() -> None:
    rng = random.Random(11)
    compared = 0
    for _ in range(6000):
        a, b = _value(rng, 0), _value(rng, 0)
        if rng.random() < 0.3 and isinstance(a, (list, tuple, dict)):
            b = type(a)(a)  # the same items (identity shortcut, NaN included)
        for op, real in _OPS.items():
            mine = functools.partial(checked_compare, op)
            assert _outcome(mine, a, b) == _outcome(real, a, b), (op, a, b)
            compared += 1
        seq = [_value(rng, 1) for _ in range(rng.randrange(6))] + ([a] if rng.random() < 0.5 else [])
        for container in (seq, tuple(seq)):
            assert checked_contains(a, container) == (a in container)
            assert search_method(container, "count")(a) == container.count(a)
            assert _outcome(search_method(container, "index"), a) == _outcome(container.index, a)
    assert compared > 20000


def test_long_lists_in_chunks_give_what_the_builtins_give() -> None:
    """Lists longer than a chunk, with costly items (long texts) and a difference far in."""
    long = "y" * 5000
    a = [long + "a"] * 3000 + [[1, 2]] * 10 + [5]
    for b in (list(a), a[:-1] + [6], a[:2500] + [long + "b"] + a[2501:], a + [0], a[:-5]):
        for op, real in _OPS.items():
            assert checked_compare(op, a, b) == real(a, b)
            assert checked_compare(op, tuple(a), tuple(b)) == real(tuple(a), tuple(b))
    assert search_method(a, "index")(5) == a.index(5) and search_method(a, "count")([1, 2]) == 10
    items = [1, [2], 3, [2]]
    search_method(items, "remove")([2])
    assert items == [1, 3, [2]]
    with pytest.raises(ValueError):
        search_method(items, "remove")(9)
    assert search_method(a, "index")(long + "a", 5, 10) == 5
    with pytest.raises(ValueError):
        search_method((1, 2), "index")(1, 1)
    assert checked_compare("<", [_NAN], [_NAN]) is False and checked_compare("==", [_NAN], [_NAN]) is True
    assert math.isnan(_NAN)


def test_long_dicts_and_subclasses_in_steps_give_what_the_builtins_give() -> None:
    """Dicts whose values are costly to compare, and a cell's subclasses of list and tuple that keep the
    base's comparison, go through the steps and give the builtins' answers (NaN values, other orders)."""
    long = "y" * 50_000
    a = {i: long + str(i % 3) for i in range(200)}
    variants = [dict(a), {**a, 7: long + "z"}, {k: a[k] for k in reversed(a)}, {**a, 999: long}, {1: _NAN}]
    for b in variants:
        for op in ("==", "!="):
            assert checked_compare(op, a, b) == _OPS[op](a, b)
    nan = {1: _NAN, 2: [long] * 3}
    assert checked_compare("==", nan, dict(nan)) is True
    assert checked_compare("==", nan, {1: _NAN, 2: [long] * 3}) is True
    assert _outcome(functools.partial(checked_compare, "<"), a, dict(a)) == ("TypeError",)
    rows = [long + "a"] * 3000
    for kind in (_List, _Tuple):
        left, right = kind(rows), kind(rows[:-1] + [long + "b"])
        for op, real in _OPS.items():
            assert checked_compare(op, left, right) == real(left, right), (kind, op)


def test_a_dict_subclass_is_sized_as_a_dict_and_deep_nesting_compares() -> None:
    """A subclass's own __len__ does not decide dict equality (CPython uses the stored size); lists nested
    deeper than the steps' frames allow still compare, as they do in Python."""

    class D(dict):
        def __len__(self) -> int:
            return 0

    class Equal:
        def __eq__(self, other: object) -> bool:
            return True

    v = Equal()
    assert checked_compare("==", D(a=v), D(a=v, b=v)) is (D(a=v) == D(a=v, b=v)) is False
    assert checked_compare("!=", D(a=v), D(a=v, b=v)) is True

    def nest(depth: int) -> list:
        out: list = ["y" * 5000 + "a"] * 1000
        for _ in range(depth):
            out = [out]
        return out

    assert checked_compare("==", nest(600), nest(600)) is True
    assert checked_compare("!=", nest(600), nest(600)) is False


def test_hash_budget_refuses_only_shared_nesting() -> None:
    assert checked_hash((1, (2, (3, "a")))) == hash((1, (2, (3, "a"))))
    assert checked_hash(tuple(range(10**5))) == hash(tuple(range(10**5)))
    t: Any = (1,) * 10
    for _ in range(12):
        t = (t,) * 10
    with pytest.raises(LimitExceeded, match="nests the same tuples"):
        checked_hash(t)


def _container(rng: random.Random, items: list[Any]) -> Any:
    kind = rng.choice(["list", "L", "tuple", "T", "deque", "dict", "default", "ordered", "D"])
    if kind == "list":
        return list(items)
    if kind == "L":
        return _List(items)
    if kind == "tuple":
        return tuple(items)
    if kind == "T":
        return _Tuple(items)
    if kind == "deque":
        return collections.deque(items)
    pairs = [(rng.choice([0, 1, "k"]), item) for item in items]
    if kind == "default":
        return collections.defaultdict(int, pairs)
    if kind == "ordered":
        return collections.OrderedDict(pairs)
    if kind == "D":
        return _Dict(pairs)
    return dict(pairs)


class _Dict(dict):
    """A cell's dict subclass that keeps dict's comparison."""


def test_mixed_kinds_and_iterators_give_what_the_builtins_give() -> None:
    """Subclasses against their bases, defaultdict/OrderedDict against dict, deques, dict views and
    iterators: the stepped comparisons and searches (and the unbound methods, operator and super() routes)
    give the builtins' answers."""
    rng = random.Random(5)
    long = "y" * 70
    for _ in range(2000):
        items = [_value(rng, 1) for _ in range(rng.randrange(5))] + [long + "a"] * rng.randrange(3)
        a = _container(rng, items)
        b = _container(rng, list(items) if rng.random() < 0.5 else items[::-1])
        for op, real in _OPS.items():
            mine = functools.partial(checked_compare, op)
            assert _outcome(mine, a, b) == _outcome(real, a, b), (op, a, b)
        value = rng.choice(items) if items and rng.random() < 0.6 else _value(rng, 1)
        if isinstance(value, (list, dict)) or type(a) in (
            dict,
            collections.defaultdict,
            collections.OrderedDict,
            _Dict,
        ):
            pass
        else:
            assert _outcome(checked_contains, value, a) == _outcome(operator.contains, a, value)
        seq = list(items)
        for container in (iter(seq), (x for x in seq), {i: x for i, x in enumerate(seq)}.values()):
            assert checked_contains(value, container) == (value in list(seq))
        pairs = {i: x for i, x in enumerate(seq)}
        probe = (rng.randrange(len(seq) + 1), value)
        assert checked_contains(probe, pairs.items()) == (probe in pairs.items())
        for kind in (list, tuple, collections.deque, _List):
            target = kind(seq)
            assert count_of(target, value) == operator.countOf(target, value)
            assert _outcome(index_of, target, value) == _outcome(operator.indexOf, target, value)
            for name in ("count", "index"):
                unbound = search_method(kind, name)
                assert _outcome(unbound, target, value) == _outcome(getattr(kind, name), target, value)
        removed, real_removed = collections.deque(seq), collections.deque(seq)
        assert _outcome(search_method(removed, "remove"), value) == _outcome(real_removed.remove, value)
        assert list(removed) == list(real_removed)


def test_super_routes_compare_on_the_stored_items() -> None:
    """`super().__eq__`/`__contains__`/`count` in a cell's override answer as the base's C method does."""

    class Overriding(list):
        def __eq__(self, other: object) -> Any:
            return "own"

    proxy = super(Overriding, Overriding([1, [2]]))
    assert super_method(proxy, "__eq__")([1, [2]]) is True
    assert super_method(proxy, "__eq__")((1, [2])) is NotImplemented
    assert super_method(proxy, "__lt__")([1, [3]]) is True
    assert super_method(proxy, "__contains__")([2]) is True
    assert super_method(proxy, "count")([2]) == 1
    assert super_method(proxy, "__hash__") is None


def test_stepped_bisect_heapq_groupby_give_what_the_modules_give() -> None:
    """The Python-level bisect/heapq/groupby of stepped_stdlib (taken when the value is not light: nested
    lists) give what the C modules give."""
    import bisect
    import heapq
    import itertools

    from rlm_kernel.sandbox import stepped_stdlib as stepped

    rng = random.Random(9)
    for _ in range(300):
        items = [[rng.randrange(4), [rng.randrange(3)]] for _ in range(rng.randrange(12))]
        ordered = sorted(items)
        probe = [rng.randrange(4), [rng.randrange(3)]]
        assert stepped.bisect_left(ordered, probe) == bisect.bisect_left(ordered, probe)
        assert stepped.bisect_right(ordered, probe) == bisect.bisect_right(ordered, probe)
        mine, real = list(ordered), list(ordered)
        stepped.insort_left(mine, probe)
        bisect.insort_left(real, probe)
        assert mine == real
        mine, real = list(items), list(items)
        stepped.heapify(mine)
        heapq.heapify(real)
        stepped.heappush(mine, probe)
        heapq.heappush(real, probe)
        assert [stepped.heappop(mine) for _ in range(len(mine))] == [
            heapq.heappop(real) for _ in range(len(real))
        ]
        assert stepped.nsmallest(3, items) == heapq.nsmallest(3, items)
        assert stepped.nlargest(2, items, key=lambda v: v[1]) == heapq.nlargest(2, items, key=lambda v: v[1])
        assert list(stepped.merge(ordered, sorted(items[:3]))) == list(
            heapq.merge(ordered, sorted(items[:3]))
        )
        grouped = [(k, list(g)) for k, g in stepped.groupby(ordered)]
        assert grouped == [(k, list(g)) for k, g in itertools.groupby(ordered)]


def test_sets_and_items_views_with_costly_tuples_give_what_the_builtins_give() -> None:
    """Sets of tuples holding containers, dicts keyed by them and items views compare (and search) in steps
    with the builtins' answers."""
    rng = random.Random(13)

    def key() -> tuple[Any, ...]:
        return (rng.randrange(3), (rng.randrange(2), "y" * 70))

    for _ in range(1500):
        a = {key() for _ in range(rng.randrange(5))}
        b = set(a) if rng.random() < 0.4 else {key() for _ in range(rng.randrange(5))}
        for op, real in _OPS.items():
            assert checked_compare(op, a, b) == real(a, b), (op, a, b)
            assert checked_compare(op, frozenset(a), b) == real(frozenset(a), b)
        da = {k: [rng.randrange(2)] for k in a}
        db = {k: [rng.randrange(2)] for k in b} if rng.random() < 0.5 else dict(da)
        for op in ("==", "!="):
            assert checked_compare(op, da, db) == _OPS[op](da, db)
        for op, real in _OPS.items():
            assert checked_compare(op, da.items(), db.items()) == real(da.items(), db.items())
        probe = key()
        assert checked_contains(probe, a) == (probe in a)
        assert checked_contains(probe, da) == (probe in da)


class _Set(set):
    """A cell's subclass that keeps set's comparison and lookup."""


def test_keys_views_set_subclasses_and_hashed_containers_give_what_the_builtins_give() -> None:
    """Keys views, set subclasses and frozensets of costly tuples compare in steps, and `in` of a dict
    subclass, a set subclass or a keys view looks a costly tuple up through the probe, with the builtins'
    answers (red team 4: each was one C call of minutes at full size)."""
    rng = random.Random(17)

    def key() -> tuple[Any, ...]:
        return (rng.randrange(3), (rng.randrange(2), "y" * 70))

    for _ in range(800):
        a = {key() for _ in range(rng.randrange(5))}
        b = set(a) if rng.random() < 0.4 else {key() for _ in range(rng.randrange(5))}
        da, db = dict.fromkeys(a, 0), dict.fromkeys(b, 1)
        pairs = [
            (da.keys(), db.keys()),
            (a, db.keys()),
            (da.keys(), frozenset(b)),
            (_Set(a), _Set(b)),
            (_Set(a), b),
            (collections.OrderedDict(da).keys(), b),
            (da.items(), {(k, 0) for k in b}),
            ({(k, 1) for k in a}, db.items()),
        ]
        for left, right in pairs:
            for op, real in _OPS.items():
                assert checked_compare(op, left, right) == real(left, right), (op, left, right)
        probe = key()
        for container in (
            da.keys(),
            _Set(a),
            collections.defaultdict(int, da),
            collections.Counter(da),
            collections.OrderedDict(da),
        ):
            assert checked_contains(probe, container) == (probe in container)
        light = ((rng.randrange(3), rng.randrange(2)), (rng.randrange(2), "k"))
        keyed = {((0, 1), (1, "k")): 1, ((2, 0), (0, "k")): 2}
        for container in (keyed, keyed.keys(), set(keyed), collections.Counter(keyed)):
            assert checked_contains(light, container) == (light in container)
        fa, fb = frozenset(a), frozenset(b)
        assert checked_contains(fa, {fb}) == (fa in {fb})
        assert checked_compare("==", {fa: 1}, {fb: 1}) == ({fa: 1} == {fb: 1})


def test_stepped_heapq_groupby_with_long_texts_give_what_the_modules_give() -> None:
    """Keys that are texts longer than a light key (compared as `_Ordered` in the C loops of nsmallest,
    nlargest, merge and groupby) give what the modules give."""
    import heapq
    import itertools

    from rlm_kernel.sandbox import stepped_stdlib as stepped

    rng = random.Random(19)
    for _ in range(300):
        items = ["x" * 70 + rng.choice("abc") for _ in range(rng.randrange(12))]
        for n in (1, 3, len(items) + 1):
            assert stepped.nsmallest(n, items) == heapq.nsmallest(n, items)
            assert stepped.nlargest(n, items, key=str.upper) == heapq.nlargest(n, items, key=str.upper)
        runs = [sorted(items[i::3]) for i in range(3)]
        assert list(stepped.merge(*runs)) == list(heapq.merge(*runs))
        assert [(k, list(g)) for k, g in stepped.groupby(items)] == [
            (k, list(g)) for k, g in itertools.groupby(items)
        ]
