"""One C call whose cost a count of items does not see: hash tables built at once and comparisons of long
values (sandbox/bulk.py, sandbox/ordering.py). Each attack must stop at the CPU limit — not minutes later,
when the C call returns — and the checked classes and functions must give what the real ones give.
"""

from __future__ import annotations

import random
import resource

import pytest

from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source
from rlm_kernel.sandbox.bulk import CappedDict, CappedFrozenset, CappedSet
from rlm_kernel.sandbox.ordering import checked_max, checked_min, chunked_sort, comparison_weight
from tests.sandbox.payloads import HASH_ATTACKS, LIBRARY_COMPARE_ATTACKS, LIMIT_ERRORS, STEP_ATTACKS, Payload
from tests.sandbox.test_payloads import check, error_name

# CPU seconds one attack may use in all, for a cell limit of 1 s (tests/sandbox/conftest.py): unchecked, each
# of these runs for minutes in one C call.
CPU_CEILING = 8.0


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


_ATTACKS = STEP_ATTACKS + HASH_ATTACKS + LIBRARY_COMPARE_ATTACKS


@pytest.mark.parametrize("payload", _ATTACKS, ids=[p.id for p in _ATTACKS])
def test_attack_stops_at_the_limit(payload: Payload, session: SandboxSession) -> None:
    namespace = new_namespace(session)
    start = _cpu()
    outcome = run_source(payload.code, namespace, session)
    spent = _cpu() - start
    check(payload, outcome)
    assert spent < CPU_CEILING, f"{payload.id} used {spent:.1f} s of CPU for a 1 s limit"


def _samples() -> list[list[object]]:
    rng = random.Random(7)
    long = "x" * 300
    return [
        [rng.random() for _ in range(5000)],
        [rng.randrange(-(10**6), 10**6) for _ in range(5000)],
        [rng.randrange(2**200) for _ in range(500)],
        [rng.choice("abc") * rng.randrange(1, 5) for _ in range(3000)],
        [long + rng.choice("abc") for _ in range(3000)],
        [(rng.randrange(5), rng.choice("xy")) for _ in range(3000)],
        [(rng.randrange(5), long + rng.choice("xy")) for _ in range(3000)],
        [bytes([rng.randrange(256)]) * 3 for _ in range(2000)],
        [1, 1.0, True, 0, 0.0, False],
        [[2], [1, 2], [1]],
        [],
    ]


@pytest.mark.parametrize("items", _samples(), ids=lambda items: type(items[0]).__name__ if items else "empty")
def test_ordering_gives_what_the_builtins_give(items: list[object]) -> None:
    for reverse in (False, True):
        assert chunked_sort(list(items), reverse=reverse) == sorted(items, reverse=reverse)
        got = chunked_sort(list(items), key=str, reverse=reverse)
        assert got == sorted(items, key=str, reverse=reverse)  # stable: equal keys keep their order
        assert [id(x) for x in got] == [id(x) for x in sorted(items, key=str, reverse=reverse)]
    if items:
        for mine, real in ((checked_min, min), (checked_max, max)):
            assert mine(items) is real(items)  # the first of equal extremes, as the builtins
            assert mine(items, key=str) is real(items, key=str)
            assert mine(iter(items)) is real(iter(items))
    assert checked_min([], default=None) is None and checked_max(3, 9, 4) == 9


def test_records_are_weighed_by_position() -> None:
    """Records of one shape are weighed position by position with C-level passes, so a sort of ordinary
    rows (a short label and an int) stays a C sort; a long text at any position still weighs its length."""
    rows = [(str(i % 10), -i) for i in range(1000)]
    assert comparison_weight(rows) <= 64
    long = "x" * 10**6
    assert comparison_weight([(1, long + "a"), (1, long + "b")]) > 10**6
    assert comparison_weight([(1, long + "a"), (1, long, 2)]) > 10**6  # uneven records: all flattened
    assert comparison_weight([(1, 2.5), (1, None)]) <= 64
    assert comparison_weight([(1, ("nested",))]) is None and comparison_weight([(1, object())]) is None


def test_bulk_classes_give_real_objects() -> None:
    rng = random.Random(3)
    data = [rng.randrange(10**4) for _ in range(20_000)]
    assert type(CappedSet(data)) is set and CappedSet(data) == set(data)
    assert type(CappedFrozenset(data)) is frozenset and CappedFrozenset(data) == frozenset(data)
    pairs = list(enumerate(data))
    assert type(CappedDict(pairs)) is dict and CappedDict(pairs) == dict(pairs)
    assert CappedDict(pairs, z=1) == dict(pairs, z=1)
    assert list(CappedDict.fromkeys(data, 0)) == list(dict.fromkeys(data, 0))  # insertion order kept
    assert CappedDict({"a": 1}) == {"a": 1} and CappedSet() == set() and CappedDict() == {}
    assert isinstance(set(), CappedSet) and issubclass(bool, int) and not isinstance([], CappedDict)
    with pytest.raises(TypeError):
        CappedSet([1], [2])


def test_normalize_in_pieces_gives_what_unicodedata_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces split before ASCII characters normalise as the whole text does (small pieces, random text of
    composing marks, Hangul jamo, compatibility characters and ASCII)."""
    import unicodedata

    import rlm_kernel.sandbox.safe_stdlib as safe

    monkeypatch.setattr(safe, "_NORMALIZE_PIECE", 50)
    normalize = safe.checked_normalize(0)
    rng = random.Random(1)
    codes = [*range(0x20, 0x7F), *range(0x20, 0x7F), *range(0x300, 0x370), *range(0xC0, 0x180)]
    codes += [*range(0x1100, 0x1176), *range(0xAC00, 0xAC40), 0xFDFA, 0x1E9B, 0x212B, 0x0344, 0x0F73]
    codes += [0x2126, 0xFB2C, 0x0DCF, 0x0DD9, 0x0BBE, 0x09BE, 0x0B3E, 0x0B57, 0x102E, 0x1161, 0x11A8]
    alphabet = [chr(c) for c in codes]
    compared = 0
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(50, 400)))
        for form in ("NFC", "NFD", "NFKC", "NFKD"):
            try:
                got = normalize(form, text)
            except Exception:  # LimitExceeded: no ASCII character within a piece
                continue
            compared += 1
            assert got == unicodedata.normalize(form, text), (form, text)
    assert compared > 3000


def test_colliding_sets_built_over_cells_stop_at_the_limit(session: SandboxSession) -> None:
    """Ints that share one hash, added to a set a thousand per cell (each cell within the limit), then
    combined with a copy (a C copy of the table is cheap): in one C call each operation looks every item up
    along a chain of all the others (13 s for `u & u.copy()` of 30 000 here). In steps each one stops at the
    limit, or finishes within it (`isdisjoint` stops at its first common item)."""
    namespace = new_namespace(session)
    setup = "M = 2**61 - 1\nx = [k * M for k in range(1, 30001)]\nu = set()\n"
    assert run_source(setup, namespace, session).error is None
    for start in range(0, 30000, 1000):
        outcome = run_source(f"u.update(x[{start}:{start + 1000}])", namespace, session)
        if outcome.error is not None:
            pytest.skip(f"building the set took too long on this machine: {outcome.error}")
    stopped = 0
    for op in (
        "r = u & u.copy()",
        "r = u - u.copy()",
        "r = u ^ u.copy()",
        "r = u.issubset(u.copy())",
        "v = u.copy()\nv &= u",
        "r = u.isdisjoint(u.copy())",
        "r = u | set(u)",
        "r = u == u.copy()",
    ):
        start = _cpu()
        outcome = run_source(op, namespace, session)
        spent = _cpu() - start
        assert outcome.error is None or error_name(outcome) in LIMIT_ERRORS, (op, outcome)
        stopped += outcome.error is not None
        assert spent < CPU_CEILING, f"{op} used {spent:.1f} s of CPU for a 1 s limit"
    assert stopped >= 4
