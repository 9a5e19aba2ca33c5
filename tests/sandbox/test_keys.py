"""Hash-table operations with a cell's keys (sandbox/keys.py and the guards that use it) give what the
builtins give: random keys (scalars, records, nested tuples, namedtuples, frozensets, equal tuples made
separately, ints sharing one hash) through lookups, writes and methods, in process and in cells; tuples whose
hash would be one long C call are refused with a clear error."""

from __future__ import annotations

import collections
import random
from typing import Any

import pytest

from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source
from rlm_kernel.sandbox.compare import HASH_DEPTH, costly_key
from rlm_kernel.sandbox.errors import LimitExceeded
from rlm_kernel.sandbox.keys import item_key, keyed_method

_M = 2**61 - 1
_P = collections.namedtuple("_P", "x y")


def _key(rng: random.Random, long: str) -> Any:
    roll = rng.random()
    if roll < 0.2:
        return rng.choice([0, 1, -1, -2, 1.0, True, "a", "b", None, _M, 2 * _M, b"z"])
    if roll < 0.4:
        return (rng.randrange(3), rng.choice("ab"))
    if roll < 0.55:  # equal to another key but a distinct object, and costly to compare
        return (long[: rng.choice([-1, len(long)])],) * 3000 + (rng.randrange(2),)
    if roll < 0.65:
        return ((rng.randrange(2), (rng.randrange(2), "k")), rng.randrange(2))
    if roll < 0.75:
        return _P(rng.randrange(2), rng.choice("xy"))
    if roll < 0.85:
        return frozenset([rng.randrange(3), (long,) * 2000 if rng.random() < 0.5 else 1])
    return rng.randrange(1, 4) * _M  # ints sharing one hash


def _fresh(key: Any) -> Any:
    """An equal key made anew (distinct objects all the way down)."""
    if type(key) is tuple:
        return tuple(_fresh(k) for k in key)
    if type(key) is str:
        return key[:-1] + key[-1:]
    if type(key) is frozenset:
        return frozenset(_fresh(k) for k in key)
    return key


@pytest.mark.parametrize("seed", range(6))
def test_keyed_operations_give_what_the_builtins_give(seed: int) -> None:
    rng = random.Random(seed)
    long = "x" * 20_000
    keys = [_key(rng, long) for _ in range(40)]
    mine: dict[Any, Any] = {}
    real: dict[Any, Any] = {}
    mine_set: set[Any] = set()
    real_set: set[Any] = set()
    for i, key in enumerate(keys):
        other = _fresh(key)
        mine[item_key(mine, key)] = i
        real[key] = i
        assert keyed_method(mine, "get")(other, -1) == real.get(other, -1)
        assert mine[item_key(mine, other)] == real[other]
        keyed_method(mine_set, "add")(key)
        real_set.add(key)
        if rng.random() < 0.2:
            keyed_method(mine_set, "discard")(other)
            real_set.discard(other)
        if rng.random() < 0.1:
            assert keyed_method(mine, "pop")(other, None) == real.pop(other, None)
        assert keyed_method(mine, "setdefault")(other, i) == real.setdefault(other, i)
    assert mine == real and list(mine) == list(real)
    assert [id(k) for k in mine] == [id(k) for k in real]  # the first key inserted is the one kept
    assert mine_set == real_set and len(mine_set) == len(real_set)
    unbound = keyed_method(dict, "get")
    assert unbound(mine, keys[0]) == real.get(keys[0])


def test_cheap_keys_are_not_probed() -> None:
    assert not costly_key((1, "a")) and not costly_key(((1, 2), ("a", 3))) and not costly_key(_P(1, 2))
    assert not costly_key(tuple(range(10_000))) and not costly_key(frozenset({1, 2}))
    assert costly_key(("x" * 10**4,) * 1000) and costly_key(tuple((i,) for i in range(100)))


def test_tuples_whose_hash_is_one_long_call_are_refused() -> None:
    shared: Any = ()
    for _ in range(60):
        shared = (shared, shared)
    deep: Any = ()
    for _ in range(HASH_DEPTH + 5):
        deep = (deep,)
    deep_named: Any = ()
    for _ in range(HASH_DEPTH + 5):
        deep_named = _P(deep_named, 1)
    for value in (shared, deep, deep_named):
        with pytest.raises(LimitExceeded):
            item_key({}, value)
        with pytest.raises(LimitExceeded):
            keyed_method(set(), "add")(value)
    ok: Any = ()
    for _ in range(HASH_DEPTH - 5):
        ok = (ok,)
    assert item_key({ok: 1}, ok) is ok


_CELL = """
M = 2**61 - 1
P = collections.namedtuple('P', 'x y')
long = 'x' * 20000
def fresh(k):
    if type(k) is tuple:
        return tuple(fresh(v) for v in k)
    if type(k) is str:
        return k[:-1] + k[-1:]
    return k
keys = [(1, 'a'), (long,) * 300, ((1, (2, 'k')), 3), P(1, 'x'), M, 2 * M, 'k', 0]
keys += [(long,) * 300 + (M,), (long,) * 300 + (2 * M,)]
d = {}
s = set()
out = []
for i, k in enumerate(keys):
    f = fresh(k)
    d[k] = i
    d[f] = i + 100
    s.add(k)
    out.append((d[f], d.get(f), f in d, f in s, k in {1, 'k'}))
    d[f] += 1
    s.discard(f)
    s.add(f)
    if i % 3 == 0:
        del d[f]
        s.remove(f)
out.append((len(d), len(s), sorted(map(str, d.values()))))
print(out)
"""


def test_cells_give_what_plain_python_gives(session: SandboxSession) -> None:
    namespace = new_namespace(session)
    outcome = run_source("import collections\n" + _CELL, namespace, session)
    assert outcome.error is None, outcome.error
    plain: dict[str, Any] = {"collections": collections}
    printed: list[str] = []
    plain["print"] = lambda v: printed.append(str(v))
    exec(_CELL, plain)  # noqa: S102 - the test's own code
    assert outcome.stdout.strip() == printed[0]


def test_lru_cache_gives_what_functools_gives() -> None:
    """The sandbox's lru_cache/cache: the same results, hits and misses as functools' for equal arguments
    made separately (costly tuples among them), keyword arguments, methods and cache_clear."""
    import functools

    from rlm_kernel.sandbox.keys import cache, lru_cache

    long = "q" * 20_000
    args = [(long,) * 300, ((long[:-1] + long[-1:]),) * 300, (1, 2), 5, "k", (long,) * 300 + (_M,), (2 * _M,)]
    for mine_deco, real_deco in (
        (lru_cache(maxsize=3), functools.lru_cache(maxsize=3)),
        (cache, functools.cache),
    ):
        mine = mine_deco(lambda x, k=0: (len(x) if hasattr(x, "__len__") else x, k))
        real = real_deco(lambda x, k=0: (len(x) if hasattr(x, "__len__") else x, k))
        for i, arg in enumerate(args * 2):
            assert mine(arg, k=i % 2) == real(arg, k=i % 2)
        assert mine.cache_info() == real.cache_info()
        mine.cache_clear()
        assert mine.cache_info().currsize == 0
    assert lru_cache(lambda: 1)() == 1
