"""Set algebra in steps (sandbox/setops.py) gives what the builtins give: random sets, frozensets and dict
views of ints, colliding ints, records, equal costly tuples made separately and frozensets, small (one C
call) and large (in steps), through the operators, their in-place forms, `d | e` and the set methods; and
through cells."""

from __future__ import annotations

import operator
import random
from typing import Any

import pytest

from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source
from rlm_kernel.sandbox.setops import SET_GUARDS, inplace, set_method

_M = 2**61 - 1
_LONG = "y" * 20_000
_OPS = {"&": operator.and_, "|": operator.or_, "-": operator.sub, "^": operator.xor}
_GUARD = {"&": "_bitand_", "|": "_bitor_", "-": "_sub_", "^": "_bitxor_"}
_IOPS = {"&=": operator.iand, "|=": operator.ior, "-=": operator.isub, "^=": operator.ixor}


def _item(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return rng.randrange(60)
    if roll < 0.6:
        return rng.randrange(1, 30) * _M  # one hash value
    if roll < 0.75:
        return (rng.randrange(4), rng.choice("ab"))
    if roll < 0.9:  # equal to others but distinct objects, costly to compare
        return (_LONG[: rng.choice([-1, len(_LONG)])] + "",) * 300 + (rng.randrange(2),)
    return frozenset({rng.randrange(3)})


def _fresh(item: Any) -> Any:
    if type(item) is tuple and len(item) > 16:
        return tuple(x[:-1] + x[-1:] if type(x) is str else x for x in item)
    return item


def _pair(rng: random.Random, n: int) -> tuple[set[Any], set[Any]]:
    a = {_item(rng) for _ in range(n)}
    b = {_fresh(x) for x in a if rng.random() < 0.5} | {_item(rng) for _ in range(n)}
    if rng.random() < 0.3:  # large: in steps even for cheap items
        a |= set(range(1000, 1000 + 5000))
        b |= set(range(3000, 3000 + 5000))
    return a, b


def _same(mine: Any, real: Any) -> None:
    assert type(mine) is type(real)
    assert mine == real and len(mine) == len(real)


@pytest.mark.parametrize("seed", range(8))
def test_operators_give_what_the_builtins_give(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(4):
        a, b = _pair(rng, rng.choice([3, 30, 200]))
        fa = frozenset(a)
        da, db = dict.fromkeys(a, 1), dict.fromkeys(b, 2)
        for op, real in _OPS.items():
            guard = SET_GUARDS[_GUARD[op]]
            for x, y in ((a, b), (fa, b), (b, fa), (da.keys(), db.keys()), (da.keys(), b), (b, da.keys())):
                _same(guard(x, y), real(x, y))
            for iop, ireal in _IOPS.items():
                mine, theirs = set(a), set(a)
                got = inplace(iop, mine, b)
                assert got is mine and ireal(theirs, b) == mine
        _same(SET_GUARDS["_bitor_"](da, db), da | db)
        mine_d = dict(da)
        inplace("|=", mine_d, db)
        assert mine_d == {**da, **db} and list(mine_d) == list({**da, **db})
        for name in ("intersection", "difference", "union", "symmetric_difference"):
            for obj in (a, fa):
                _same(set_method(obj, name)(list(b)), getattr(obj, name)(list(b)))
        for name in ("issubset", "issuperset", "isdisjoint"):
            assert set_method(a, name)(b) == getattr(a, name)(b)
            assert set_method(a, name)(list(b)) == getattr(a, name)(list(b))
        for name in ("intersection_update", "difference_update", "symmetric_difference_update", "update"):
            mine, theirs = set(a), set(a)
            set_method(mine, name)(list(b))
            getattr(theirs, name)(list(b))
            assert mine == theirs


def test_numbers_and_other_types_pass_through() -> None:
    sub, bor = SET_GUARDS["_sub_"], SET_GUARDS["_bitor_"]
    assert sub(7, 3) == 4 and bor(5, 2) == 7 and bor(int, None) == int | None and sub(2.5, 1) == 1.5
    with pytest.raises(TypeError, match="unsupported operand"):
        bor({1}, [2])
    with pytest.raises(TypeError, match="unsupported operand"):
        inplace("|=", {1}, [2])


_CELL = """
a = {1, 2, (3, 'x'), frozenset({4})}
b = frozenset({2, 5, (3, 'x')})
d = {1: 'a', 2: 'b'}
e = {2: 'c', 9: 'd'}
big = set(range(6000))
other = set(range(3000, 9000))
s = set(a)
s |= b
s -= {1}
s &= {2, 5, (3, 'x'), 7}
s ^= {8}
t = 9
t -= 4
t &= 6
d2 = dict(d)
d2 |= e
print(sorted(map(str, a & b)), sorted(map(str, a | b)), sorted(map(str, a - b)), sorted(map(str, b ^ a)),
      type(b & a).__name__, sorted(d.keys() & e.keys()), sorted(d.keys() ^ e), d | e, d2,
      sorted(map(str, s)), t,
      len(big & other), len(big | other), len(big - other), len(big ^ other), big.isdisjoint(other),
      [x - y for x, y in [(3, 1), (2.5, 0.5)]], a.intersection(b) == a & b)
"""


def test_cells_give_what_plain_python_gives(session: SandboxSession) -> None:
    outcome = run_source(_CELL, new_namespace(session), session)
    assert outcome.error is None, outcome.error
    printed: list[str] = []
    exec(_CELL, {"print": lambda *v: printed.append(" ".join(map(str, v)))})  # noqa: S102 - the test's own code
    assert outcome.stdout.strip() == printed[0]
