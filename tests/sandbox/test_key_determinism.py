"""Hash-table keys whose comparison or hash is Python code that answers differently when C asks again
(sandbox/keys.py): the stepped probe told the key from a stored key quickly, then C compared them again and
ran on through their equal rest — 2 * 10**5 texts of 10**7 characters, over 100 s in one C call for a 1 s
limit. Each attack must stop at the limit; honest keys holding a cell's objects give the builtins' results."""

from __future__ import annotations

import time

import pytest

from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source
from tests.sandbox.payloads import _KEYS, _SAME, LIMIT, OK, Payload
from tests.sandbox.test_payloads import check

CPU_CEILING = 8.0  # CPU seconds one attack may use in all, for a cell limit of 1 s (conftest.TEST_LIMITS)

# `X.__eq__` says False the first time it is asked (the probe) and True after (C's own comparison).
_TOGGLE_EQ = (
    _KEYS + "class X:\n    n = 0\n    def __hash__(self):\n        return 1\n"
    "    def __eq__(self, o):\n        X.n += 1\n        return X.n > 1\n"
    "x1 = X()\nx2 = X()\ns = (x1,) + ta\nk = (x2,) + tb\n"
)
# The stored key holds the Python `__eq__` (it is C's left operand), the key looked up only texts.
_TOGGLE_STORED = (
    _KEYS + "class X(str):\n    n = 0\n    def __hash__(self):\n        return hash(str(self))\n"
    "    def __eq__(self, o):\n        X.n += 1\n        return X.n > 1\n"
    "s = (X('q'),) + ta\nk = ('q',) + tb\n"
)
# `X.__hash__` alternates: the probe sees a hash no stored key has, C the stored key's (3 * 10**4 texts:
# about 30 s in one C call when it is open).
_SMALL_KEYS = _SAME + "ta = (a,) * 3 * 10**4\ntb = (b,) * 3 * 10**4\n"
_TOGGLE_HASH = (
    _SMALL_KEYS + "class X:\n    n = 0\n    def __hash__(self):\n        X.n += 1\n        return X.n % 2\n"
    "    def __eq__(self, o):\n        return True\nx = X()\ns = (x,) + ta\nk = (x,) + tb\n"
)

DETERMINISM_ATTACKS = [
    Payload("op_step", "key_eq_toggle_getitem", _TOGGLE_EQ + "d = {s: 1}\nX.n = 0\nr = d[k]", LIMIT),
    Payload("op_step", "key_eq_toggle_setitem", _TOGGLE_EQ + "d = {s: 1}\nX.n = 0\nd[k] = 2", LIMIT),
    Payload("op_step", "key_eq_toggle_get", _TOGGLE_EQ + "d = {s: 1}\nX.n = 0\nr = d.get(k)", LIMIT),
    Payload("op_step", "key_eq_toggle_set_add", _TOGGLE_EQ + "z = {s}\nX.n = 0\nz.add(k)", LIMIT),
    Payload("op_step", "key_eq_toggle_display", _TOGGLE_EQ + "z = [s, k]\nX.n = 0\nr = set(z)", LIMIT),
    # a stored key of a cell's class receives the probe in its __eq__ and empties what the probe recorded
    Payload(
        "op_step",
        "key_eq_toggle_probe_cleared",
        _TOGGLE_EQ + "class H:\n    def __hash__(self):\n        return hash(s)\n    def __eq__(self, o):\n"
        "        if type(o) is not tuple:\n            getattr(o, 'others', []).clear()\n"
        "        return False\n"
        "d = {s: 1}\nd[H()] = 0\nX.n = 0\nr = d[k]",
        LIMIT,
    ),
    Payload("op_step", "key_eq_toggle_stored", _TOGGLE_STORED + "d = {s: 1}\nX.n = 0\nr = d.get(k)", LIMIT),
]
# The stored key is plain (texts only); `X.__hash__` gives the probe a hash no stored key has and C the
# stored key's, so only the key looked up could be refused.
_TOGGLE_HASH_LOOKUP = (
    _SMALL_KEYS + "class X:\n    n = 0\n    def __hash__(self):\n        X.n += 1\n"
    "        return hash(a) if X.n % 2 == 0 else 1\n"
    "    def __eq__(self, o):\n        return True\nx = X()\nk = (x,) + tb[1:]\n"
)


def _hash(name: str, code: str, keys: str = _TOGGLE_HASH) -> Payload:
    return Payload("op_step", name, keys + code, LIMIT)


HASH_ATTACKS = [
    _hash("key_hash_toggle_getitem", "d = {}\nd[s] = 1\nr = d[k]"),
    _hash("key_hash_toggle_in", "d = {}\nd[s] = 1\nr = d.get(k)"),
    _hash("key_hash_toggle_setitem", "d = {}\nd[s] = 1\nd[k] = 2"),
    _hash("key_hash_toggle_setdefault", "d = {}\nd[s] = 1\nd.setdefault(k, 3)"),
    _hash("key_hash_toggle_pop", "d = {}\nd[s] = 1\nd.pop(k, 3)"),
    _hash("key_hash_toggle_set_add", "z = set()\nz.add(s)\nz.add(k)"),
    _hash("key_hash_toggle_set_discard", "z = set()\nz.add(s)\nz.discard(k)"),
    _hash("key_hash_toggle_set_union", "z = {s}\nz |= set([k])"),
    _hash("key_hash_toggle_matched", "d = {}\nd[s] = 1\nX.n = 1\nr = d.get(s)"),
    _hash("key_hash_toggle_lookup_get", "d = {ta: 1}\nr = d.get(k)", _TOGGLE_HASH_LOOKUP),
    _hash("key_hash_toggle_lookup_getitem", "d = {ta: 1}\nr = d[k]", _TOGGLE_HASH_LOOKUP),
    _hash("key_hash_toggle_lookup_setitem", "d = {ta: 1}\nd[k] = 2", _TOGGLE_HASH_LOOKUP),
    _hash("key_hash_toggle_lookup_set", "z = {ta}\nz.add(k)", _TOGGLE_HASH_LOOKUP),
    _hash(
        "key_hash_toggle_lookup_counter",
        "import collections\nc = collections.Counter([ta])\nc.update([k])",
        _TOGGLE_HASH_LOOKUP,
    ),
    # a membership test hands C the probe itself (its hash computed once): the second one meets the stored
    # key and compares in steps
    _hash(
        "key_hash_toggle_lookup_items",
        "r = (k, 1) in {ta: 1}.items()\nr = (k, 1) in {ta: 1}.items()",
        _TOGGLE_HASH_LOOKUP,
    ),
]
CONTROLS = [
    Payload(
        "control",
        "key_cell_objects_ok",
        "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass P:\n    x: int\n"
        "class C:\n    def __init__(self, v):\n        self.v = v\n"
        "    def __hash__(self):\n        return 7\n"
        "    def __eq__(self, o):\n        return isinstance(o, C) and self.v == o.v\n"
        "d = {}\nfor i in range(50):\n    d[(P(i), P(i + 1)) + ('w',) * 20] = i\n"
        "e = {(C(1),) + ('w',) * 20: 1}\ne[(C(1),) + ('w',) * 20] = 2\n"
        "s = {(C(2), 'a'), (C(2), 'a')}\n"
        "print(d[(P(3), P(4)) + ('w',) * 20], len(d), e, len(s), ((C(1),) + ('w',) * 20) in e, "
        "d.get((P(1), P(1))), e.get((C(3),) + ('w',) * 20, 'no'))",
        OK,
        match="3 50 {(<__main__.C object",
    ),
]


def _run(payload: Payload, session: SandboxSession) -> float:
    namespace = new_namespace(session)
    start = time.process_time()
    outcome = run_source(payload.code, namespace, session)
    spent = time.process_time() - start
    check(payload, outcome)
    return spent


@pytest.mark.parametrize("payload", DETERMINISM_ATTACKS, ids=[p.id for p in DETERMINISM_ATTACKS])
def test_python_eq_in_keys_stops_at_the_limit(payload: Payload, session: SandboxSession) -> None:
    spent = _run(payload, session)
    assert spent < CPU_CEILING, f"{payload.id} used {spent:.1f} s of CPU for a 1 s limit"


@pytest.mark.parametrize("payload", HASH_ATTACKS, ids=[p.id for p in HASH_ATTACKS])
def test_python_hash_in_keys_stops_at_the_limit(payload: Payload, session: SandboxSession) -> None:
    spent = _run(payload, session)
    assert spent < CPU_CEILING, f"{payload.id} used {spent:.1f} s of CPU for a 1 s limit"


@pytest.mark.parametrize("payload", CONTROLS, ids=[p.id for p in CONTROLS])
def test_keys_of_cell_objects_ok(payload: Payload, session: SandboxSession) -> None:
    _run(payload, session)
