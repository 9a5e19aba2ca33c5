"""Routes to a C hash-table lookup with a costly tuple key that the policy's `d[k]` / `d.get(k)` rewrites do
not see (sandbox/keys.py): the operator module's item functions, and library code written in Python that
subscripts a dict itself (Counter's arithmetic and update, OrderedDict.move_to_end, UserDict, ChainMap).
Two equal tuples made separately are compared in one C call that the time limit cannot stop."""

from __future__ import annotations

import time

import pytest

from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source
from tests.sandbox.payloads import _SAME, LIMIT, OK, Payload
from tests.sandbox.test_payloads import check

CPU_CEILING = 8.0  # CPU seconds one attack may use in all, for a cell limit of 1 s (conftest.TEST_LIMITS)

# 3 * 10**4 texts of 10**7 characters: about 30 s in one C call on this machine when it is not stepped (the
# full-size keys of payloads._KEYS run for minutes).
_KEYS = _SAME + "ta = (a,) * 3 * 10**4\ntb = (b,) * 3 * 10**4\nimport collections, operator\n"
# equal for 3 * 10**4 long texts, then different, with one hash (2**61 - 1 hashes as 0, as 2 * (2**61 - 1))
_DIFFER = _KEYS + "M = 2**61 - 1\ntc = ta + (M,)\ntd = tb + (2 * M,)\n"


def _attack(name: str, code: str, keys: str = _KEYS) -> Payload:
    return Payload("op_step", name, keys + code, LIMIT)


OPERATOR_ATTACKS = [
    Payload("op_step", "operator_getitem", _KEYS + "d = {ta: 1}\nr = operator.getitem(d, tb)", LIMIT),
    Payload("op_step", "operator_itemgetter", _KEYS + "d = {ta: 1}\nr = operator.itemgetter(tb)(d)", LIMIT),
    Payload(
        "op_step",
        "operator_itemgetter_two",
        _KEYS + "d = {ta: 1}\nr = operator.itemgetter(0, tb)({0: 1, ta: 2})",
        LIMIT,
    ),
    Payload("op_step", "operator_setitem", _KEYS + "d = {ta: 1}\noperator.setitem(d, tb, 2)", LIMIT),
    Payload("op_step", "operator_delitem", _KEYS + "d = {ta: 1}\noperator.delitem(d, tb)", LIMIT),
    Payload("op_step", "userdict_getitem", _KEYS + "r = collections.UserDict({ta: 1})[tb]", LIMIT),
    Payload("op_step", "chainmap_getitem", _KEYS + "r = collections.ChainMap({ta: 1})[tb]", LIMIT),
]
# Library code written in Python that looks keys up in C (library_keys.py's twins), and the dict views'
# membership and isdisjoint (compare.checked_contains, setops).
_C = "collections.Counter"
LIBRARY_ATTACKS = [
    _attack("counter_update_mapping", f"c = {_C}({{ta: 1}})\nc.update({{tb: 1}})"),
    _attack("counter_add", f"r = {_C}({{ta: 1}}) + {_C}({{tb: 1}})"),
    _attack("counter_add_differ", f"r = {_C}({{tc: 1}}) + {_C}({{td: 1}})", _DIFFER),
    _attack("counter_sub", f"r = {_C}({{tc: 1}}) - {_C}({{td: 1}})", _DIFFER),
    _attack("counter_or", f"r = {_C}({{tc: 1}}) | {_C}({{td: 1}})", _DIFFER),
    _attack("counter_and", f"r = {_C}({{ta: 1}}) & {_C}({{tb: 1}})"),
    _attack("counter_iadd", f"c = {_C}({{tc: 1}})\nc += {_C}({{td: 1}})", _DIFFER),
    _attack("counter_isub", f"c = {_C}({{tc: 1}})\nc -= {_C}({{td: 1}})", _DIFFER),
    _attack("counter_ior", f"c = {_C}({{tc: 1}})\nc |= {_C}({{td: 1}})", _DIFFER),
    _attack("counter_iand", f"c = {_C}({{ta: 1}})\nc &= {_C}({{tb: 1}})"),
    _attack("counter_subtract", f"c = {_C}({{ta: 1}})\nc.subtract({{tb: 1}})"),
    _attack("counter_subtract_iterable", f"c = {_C}({{ta: 1}})\nc.subtract([tb])"),
    _attack("counter_le", f"r = {_C}({{tc: 1}}) <= {_C}({{td: 1}})", _DIFFER),
    # counts are any value: most_common sorts them in C
    _attack("counter_most_common", f"r = {_C}({{'p': ta, 'q': tb}}).most_common()"),
    _attack("counter_most_common_n", f"r = {_C}({{'p': ta, 'q': tb, 'z': ta}}).most_common(1)"),
    _attack("counter_or_counts", f"r = {_C}({{'p': ta}}) | {_C}({{'p': tb}})"),
    _attack("ordereddict_move_to_end", "o = collections.OrderedDict()\no[ta] = 1\no.move_to_end(tb)"),
    _attack("ordereddict_pop_attribute", "o = collections.OrderedDict()\no[ta] = 1\np = o.pop\np(tb)"),
    _attack(
        "ordereddict_pop_unbound",
        "o = collections.OrderedDict()\no[ta] = 1\ncollections.OrderedDict.pop(o, tb)",
    ),
    _attack(
        "ordereddict_setdefault_attribute",
        "o = collections.OrderedDict()\no[ta] = 1\np = o.setdefault\np(tb)",
    ),
    _attack("dict_items_in", "r = (tb, 1) in {ta: 1}.items()"),
    _attack("dict_items_eq", "r = {ta: 1}.items() == {tb: 1}.items()"),
    _attack("dict_items_and", "r = {tc: 1}.items() & {td: 1}.items()", _DIFFER),
    _attack("dict_items_sub", "r = {tc: 1}.items() - {td: 1}.items()", _DIFFER),
    _attack("dict_items_isdisjoint", "r = {ta: 1}.items().isdisjoint([(tb, 1)])"),
    _attack("dict_keys_isdisjoint", "r = {ta: 1}.keys().isdisjoint([tb])"),
    _attack("chainmap_setitem", "c = collections.ChainMap({ta: 1})\nc[tb] = 2"),
    _attack("chainmap_delitem", "c = collections.ChainMap({ta: 1})\ndel c[tb]"),
    _attack("chainmap_pop", "c = collections.ChainMap({ta: 1})\nc.pop(tb)"),
    _attack("chainmap_len", "r = len(collections.ChainMap({tc: 1}, {td: 1}))", _DIFFER),
    _attack("chainmap_iter", "r = list(collections.ChainMap({tc: 1}, {td: 1}))", _DIFFER),
    _attack("chainmap_fromkeys", "r = collections.ChainMap.fromkeys([tc, td])", _DIFFER),
    _attack("chainmap_or", "r = collections.ChainMap({tc: 1}) | {td: 1}", _DIFFER),
    _attack("userdict_setitem", "u = collections.UserDict({ta: 1})\nu[tb] = 2"),
    _attack("userdict_delitem", "u = collections.UserDict({ta: 1})\ndel u[tb]"),
    _attack("userdict_or", "r = collections.UserDict({tc: 1}) | collections.UserDict({td: 1})", _DIFFER),
    _attack("userdict_fromkeys", "r = collections.UserDict.fromkeys([tc, td])", _DIFFER),
    _attack("userdict_update", "u = collections.UserDict({tc: 1})\nu.update({td: 1})", _DIFFER),
    _attack("counter_eq_dict", f"r = {_C}({{tc: 1}}) == {{td: 1}}", _DIFFER),
    _attack("dict_eq_counter", f"r = {{td: 1}} == {_C}({{tc: 1}})", _DIFFER),
    _attack("ordereddict_or", "r = collections.OrderedDict([(tc, 1)]) | {td: 1}", _DIFFER),
    _attack("ordereddict_ior", "o = collections.OrderedDict([(tc, 1)])\no |= {td: 1}", _DIFFER),
    _attack("defaultdict_or", "r = collections.defaultdict(int, {tc: 1}) | {td: 1}", _DIFFER),
    # SequenceMatcher keys its tables by the elements
    _attack("difflib_ratio", "import difflib\nr = difflib.SequenceMatcher(None, [ta], [tb]).ratio()"),
    _attack(
        "difflib_opcodes",
        "import difflib\nr = difflib.SequenceMatcher(None, [tc], [td]).get_opcodes()",
        _DIFFER,
    ),
]
CONTROLS = [
    Payload(
        "control",
        "operator_items_ok",
        "import operator\nd = {(1, 2): 'a', 'k': 'b', 0: 'c'}\noperator.setitem(d, (3,) * 20, 'e')\n"
        "operator.delitem(d, 'k')\nrows = [(2, 'x'), (1, 'y')]\n"
        "print(operator.getitem(d, (1, 2)), operator.itemgetter((1, 2), 0)(d), "
        "operator.itemgetter((3,) * 20)(d), sorted(rows, key=operator.itemgetter(0)), "
        "operator.itemgetter(slice(1))([5, 6]), operator.itemgetter(1, 0)('ab'), "
        "'k' in d, operator.itemgetter(((1, 2),))({((1, 2),): 'n'}))\n"
        "import collections\nclass U(collections.UserDict):\n"
        "    def __missing__(self, k):\n        return 'm'\n"
        "c = collections.ChainMap({}, {(1,) * 20: 'z'})\n"
        "print(U({(2,) * 20: 'u'})[(2,) * 20], U()[(3,) * 20], c[(1,) * 20], c.get((5,) * 20, 'g'))\n"
        "try:\n    collections.UserDict()[(4,) * 20]\n"
        "except KeyError as e:\n    print('KeyError', len(e.args[0]))",
        OK,
        match="a ('a', 'c') e [(1, 'y'), (2, 'x')] [5] ('b', 'a') False n\nu m z g\nKeyError 20",
    ),
]


def _run(payload: Payload, session: SandboxSession) -> float:
    namespace = new_namespace(session)
    start = time.process_time()
    outcome = run_source(payload.code, namespace, session)
    spent = time.process_time() - start
    check(payload, outcome)
    return spent


@pytest.mark.parametrize("payload", OPERATOR_ATTACKS, ids=[p.id for p in OPERATOR_ATTACKS])
def test_operator_items_stop_at_the_limit(payload: Payload, session: SandboxSession) -> None:
    spent = _run(payload, session)
    assert spent < CPU_CEILING, f"{payload.id} used {spent:.1f} s of CPU for a 1 s limit"


@pytest.mark.parametrize("payload", LIBRARY_ATTACKS, ids=[p.id for p in LIBRARY_ATTACKS])
def test_library_keyed_methods_stop_at_the_limit(payload: Payload, session: SandboxSession) -> None:
    spent = _run(payload, session)
    assert spent < CPU_CEILING, f"{payload.id} used {spent:.1f} s of CPU for a 1 s limit"


@pytest.mark.parametrize("payload", CONTROLS, ids=[p.id for p in CONTROLS])
def test_operator_items_ok(payload: Payload, session: SandboxSession) -> None:
    _run(payload, session)


# Honest code through the twins: cheap keys (the library's own methods), nested tuples and tuples of a
# cell's objects (the stepped loops); the output must be plain Python's, byte for byte.
_TWIN_CONTROL = """import collections, difflib
class P:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, P) and self.v == o.v
    def __hash__(self):
        return hash(self.v) % 7
    def __repr__(self):
        return 'P(' + str(self.v) + ')'
for kind in ('cheap', 'nested', 'objects'):
    if kind == 'cheap':
        a, b, c, d, e = ['a', 'b', (1, 2), 3, 'c']
    elif kind == 'nested':
        a, b, c, d, e = [((i, i),) * 40 for i in range(5)]
    else:
        a, b, c, d, e = [(P(i), P(i + 1)) + ('w',) * 20 for i in range(5)]
    x = collections.Counter({a: 3, b: 1, c: -2, d: 0})
    y = collections.Counter({a: 1, b: 4, e: 2, c: -5})
    for r in (x + y, x - y, x | y, x & y, +x, -x, y - x):
        print(sorted(repr(p) for p in r.items()))
    z = collections.Counter(x)
    z += y
    z -= collections.Counter({b: 1})
    z |= collections.Counter({d: 9})
    z &= collections.Counter({a: 2, d: 5, e: 1})
    z.update({a: 2, e: 7})
    z.update([b, b, e])
    z.subtract({a: 1, d: 4})
    z.subtract([e, c])
    del z[b]
    print(list(z.items()), x == y, x <= x + y, x >= y, z.most_common(2), z.most_common())
    o = collections.OrderedDict([(a, 1), (b, 2), (c, 3)])
    o.move_to_end(a)
    o.move_to_end(c, last=False)
    m = o.move_to_end
    m(b)
    try:
        o.move_to_end(e)
    except KeyError:
        print('KeyError move_to_end')
    p = o.pop
    print(list(o), p(a), o.pop(e, 'none'), o.setdefault(d, 4), list(o.items()))
    items = {a: 1, b: (2, 3), c: [4]}.items()
    print((a, 1) in items, (b, (2, 3)) in items, (c, [4]) in items, (a, 2) in items, (e, 1) in items,
          (a,) in items, 'q' in items, items.isdisjoint([(e, 1)]), items.isdisjoint([(a, 1)]),
          {a: 1}.keys().isdisjoint([e]), {a: 1}.keys().isdisjoint([a]),
          items == {a: 1, b: (2, 3), c: [4]}.items())
    u = collections.UserDict({a: 1, b: 2})
    u[c] = 3
    del u[b]
    cm = collections.ChainMap({a: 1}, {b: 2, a: 3})
    cm[c] = 4
    print(u.data, (u | {d: 4}).data, cm.maps, len(cm), list(cm), cm.pop(c),
          collections.ChainMap.fromkeys([a, b, a], 0).maps)
    sm = difflib.SequenceMatcher(None, [a, b, c, a], [b, a, c, d])
    sm.set_seq1([c, a])
    print(sm.ratio(), sm.get_opcodes(), x == dict(x), dict(x) == x, x != dict(x), dict(y) == x)
    od = collections.OrderedDict([(a, 1), (b, 2)]) | {c: 3, a: 0}
    dd = collections.defaultdict(int, {a: 1}) | {b: 2}
    od2 = collections.OrderedDict([(b, 1)])
    od2 |= {a: 2}
    print(list(od.items()), isinstance(od, collections.OrderedDict), dict(dd), dd.default_factory,
          list(od2.items()))
"""


def test_library_twins_give_python_results(session: SandboxSession) -> None:
    import subprocess
    import sys

    plain = subprocess.run([sys.executable, "-c", _TWIN_CONTROL], capture_output=True, text=True, check=True)
    outcome = run_source(_TWIN_CONTROL, new_namespace(session), session)
    assert outcome.error is None, outcome.error
    assert outcome.stdout == plain.stdout
