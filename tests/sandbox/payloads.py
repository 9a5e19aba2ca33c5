"""Attack payloads and positive controls for the sandbox, grouped by category, each with its expected outcome.

Run in-process by tests/sandbox/test_payloads.py and through a real kernel by test_payloads_kernel.py.
"""
# ruff: noqa: E501 - a table of code snippets reads best one payload per line

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BLOCKED",
    "CANARY_ENV_VAR",
    "CANARY_VALUE",
    "LIMIT",
    "OK",
    "PAYLOADS",
    "REFUSAL_ERRORS",
    "REFUSED",
    "TRUNCATED",
    "Payload",
    "render",
]

# Outcomes
REFUSED = "refused"  # a SandboxError (compile time or run time)
LIMIT = "limit"  # LimitExceeded, CellTimeout or MemoryError
BLOCKED = "blocked"  # any error: the thing reached for does not exist in the sandbox (or is refused)
OK = "ok"  # runs; `match` must appear in the output or result
TRUNCATED = "truncated"  # runs; the output was cut with an "output truncated" note

LIMIT_ERRORS = frozenset({"LimitExceeded", "CellTimeout", "MemoryError"})
REFUSAL_ERRORS = frozenset({"SandboxError", "ModuleNotAvailable"})

CANARY_ENV_VAR = "OPENAI_API_KEY"
CANARY_VALUE = "sk-canary-7d1c0ffee5ecret"


@dataclass(frozen=True)
class Payload:
    """One cell to run and what must happen.

    `code` may contain `{secret_file}`; `kernel_only` payloads need IPython (magics, `!cmd`, history);
    `mode` is "code", "user_expressions" or "debug_request"; `isolated` payloads need process-wide limits
    (RLIMIT_AS, the RLIMIT_CPU backstop) and only run in a kernel started for them.
    """

    category: str
    id: str
    code: str
    expect: str
    match: str | None = None
    kernel_only: bool = False
    mode: str = "code"
    isolated: bool = False


def render(payload: Payload, secret_file: str) -> str:
    """The payload's code with the canary file's path filled in."""
    return payload.code.replace("{secret_file}", secret_file)


_P = Payload

# fmt: off
# Hash tables built in one C call: 60 000 ints with one hash value (k * (2**61 - 1)) ran for minutes, 10**8
# items for tens of seconds (sandbox/bulk.py builds them in chunks the time limit can stop between).
_COLLIDE = "M = 2**61 - 1\nx = [k * M for k in range(1, 60001)]\n"
# Comparisons that cost a millisecond each: two 10**7-character strings that differ only at the end (sorted,
# min and max of 200 000 of them ran for minutes; sandbox/ordering.py compares them in Python then).
_LONG = "a = 'x' * 10**7 + 'a'\nb = 'x' * 10**7 + 'b'\n"
# Equal long texts in lists: every item comparison is a 10**7-byte memcmp; tuples nested with sharing.
_SAME = "a = 'x' * 10**7 + 'a'\nb = 'x' * 10**7 + 'a'\nc = 'x' * 10**7 + 'b'\n"
_NESTED = "t = (1,) * 10\nfor i in range(12):\n    t = (t,) * 10\n"
STEP_ATTACKS: list[Payload] = [
    Payload("op_step", "set_colliding", _COLLIDE + "s = set(x)", LIMIT),
    Payload("op_step", "frozenset_colliding", _COLLIDE + "s = frozenset(x)", LIMIT),
    Payload("op_step", "fromkeys_colliding", _COLLIDE + "s = dict.fromkeys(x)", LIMIT),
    Payload("op_step", "instance_fromkeys_colliding", _COLLIDE + "s = {}.fromkeys(x)", LIMIT),
    Payload("op_step", "dict_zip_colliding", _COLLIDE + "s = dict(zip(x, x))", LIMIT),
    Payload("op_step", "counter_colliding", "import collections\n" + _COLLIDE + "s = collections.Counter(x)", LIMIT),
    Payload("op_step", "set_of_dict_keys_colliding", _COLLIDE + "d = {}\nfor k in x[:3000]:\n    d[k] = 1\ns = set(x + list(d.keys()))", LIMIT),
    Payload("op_step", "normalize_expands", "import unicodedata\nx = unicodedata.normalize('NFKD', ('\\ufdfa' * 1000 + ' ') * 10**5)", LIMIT),
    Payload("op_step", "normalize_no_ascii", "import unicodedata\nx = unicodedata.normalize('NFKD', '\\ufdfa' * 10**8)", LIMIT),
    Payload("op_step", "set_range", "s = set(range(10**8))", LIMIT),
    Payload("op_step", "frozenset_range", "s = frozenset(range(10**8))", LIMIT),
    Payload("op_step", "fromkeys_range", "s = dict.fromkeys(range(10**8))", LIMIT),
    Payload("op_step", "set_via_type", "s = type(set())(range(10**8))", LIMIT),
    Payload("op_step", "sorted_long_texts", _LONG + "x = sorted([a, b] * 10**5)", LIMIT),
    Payload("op_step", "list_sort_long_texts", _LONG + "x = [a, b] * 10**5\nx.sort()", LIMIT),
    Payload("op_step", "sorted_key_long_texts", _LONG + "x = sorted([a, b] * 10**5, key=str.lower)", LIMIT),
    Payload("op_step", "sorted_tuples_long_texts", _LONG + "x = sorted([(a, 1), (b, 2)] * 10**5)", LIMIT),
    Payload("op_step", "dict_equal_long_values", _LONG + "c = a[:-1] + 'a'\nx = {i: a for i in range(10**5)} == {i: c for i in range(10**5)}", LIMIT),
    Payload("op_step", "list_subclass_equal_long_texts", _LONG + "class L(list):\n    pass\nc = a[:-1] + 'a'\nx = L([a] * 10**5) == L([c] * 10**5)", LIMIT),
    Payload("op_step", "tuple_subclass_less_long_texts", _LONG + "class T(tuple):\n    pass\nc = a[:-1] + 'a'\nx = T([a] * 10**5 + [1]) < T([c] * 10**5 + [2])", LIMIT),
    Payload("op_step", "sorted_records_long_texts", _LONG + "x = sorted([(1, a), (1, b)] * 10**5)", LIMIT),
    Payload("op_step", "sorted_uneven_records_long_texts", _LONG + "x = sorted([(1, a), (1, b, 2)] * 10**5)", LIMIT),
    Payload("op_step", "sorted_key_records_long_texts", _LONG + "x = sorted([a, b] * 10**5, key=lambda v: (0, v))", LIMIT),
    Payload("op_step", "max_long_texts", _LONG + "x = max([a, b] * 10**5)", LIMIT),
    Payload("op_step", "min_long_texts", _LONG + "x = min([a, b] * 10**5)", LIMIT),
    Payload("op_step", "max_key_long_texts", _LONG + "x = max([a, b] * 10**5, key=lambda v: v)", LIMIT),
    Payload("op_step", "min_long_bytes", "a = b'x' * 10**7 + b'a'\nb = b'x' * 10**7 + b'b'\nx = min([a, b] * 10**5)", LIMIT),
    Payload("op_step", "sorted_wide_ints", "a = 2**1999000\nb = a + 1\nx = sorted([a, b] * 10**5)", LIMIT),
    # methods that insert a whole iterable in one C call (red team of 84b5970)
    Payload("op_step", "set_update_colliding", _COLLIDE + "s = {1}\ns.update(x)", LIMIT),
    Payload("op_step", "set_update_unbound_colliding", _COLLIDE + "s = set()\nset.update(s, x)", LIMIT),
    Payload("op_step", "frozenset_union_colliding", _COLLIDE + "s = frozenset().union(x)", LIMIT),
    Payload("op_step", "issubset_colliding", _COLLIDE + "s = {1}.issubset(x)", LIMIT),
    Payload("op_step", "dict_update_colliding", _COLLIDE + "d = {1: 2}\nd.update(zip(x, x))", LIMIT),
    Payload("op_step", "defaultdict_update_colliding", "import collections\n" + _COLLIDE + "d = collections.defaultdict(int)\nd.update(zip(x, x))", LIMIT),
    # comparisons that recurse through lists/tuples in one C call (compare.py; red team of 2e5fef9)
    Payload("op_step", "list_eq_long_texts", _SAME + "r = [a] * 10**5 == [b] * 10**5", LIMIT),
    Payload("op_step", "list_ne_long_texts", _SAME + "r = [a] * 10**5 != [b] * 10**5", LIMIT),
    Payload("op_step", "tuple_lt_long_texts", _SAME + "r = tuple([a] * 10**5) < tuple([b] * 10**5)", LIMIT),
    Payload("op_step", "list_in_long_texts", _SAME + "r = c in [a] * 10**5", LIMIT),
    Payload("op_step", "list_not_in_long_texts", _SAME + "r = c not in [a] * 10**5", LIMIT),
    Payload("op_step", "list_count_long_texts", _SAME + "r = ([a] * 10**5).count(b)", LIMIT),
    Payload("op_step", "list_index_long_texts", _SAME + "r = ([a] * 10**5).index(c)", LIMIT),
    Payload("op_step", "tuple_count_long_texts", _SAME + "r = tuple([a] * 10**5).count(c)", LIMIT),
    Payload("op_step", "list_remove_long_texts", _SAME + "x = [a] * 10**5\nx.remove(c)", LIMIT),
    Payload("op_step", "chain_eq_long_texts", _SAME + "x = [a] * 10**5\ny = [b] * 10**5\nr = x == y == x", LIMIT),
    Payload("op_step", "sorted_lists_long_texts", _SAME + "r = sorted([[a] * 10**5, [b] * 10**5, [c] * 10**5])", LIMIT),
    Payload("op_step", "max_lists_long_texts", _SAME + "r = max([[a] * 10**5, [b] * 10**5, [c] * 10**5])", LIMIT),
    Payload("op_step", "nested_shared_hash", _NESTED + "r = hash(t)", LIMIT),
    Payload("op_step", "nested_shared_eq", _NESTED + "u = t\n" + _NESTED + "r = u == t", LIMIT),
    Payload("op_step", "nested_shared_set_display", _NESTED + "r = {t}", LIMIT),
    Payload("op_step", "nested_shared_set_call", _NESTED + "r = set([t])", LIMIT),
    Payload("op_step", "set_display_colliding", _COLLIDE + "s = {*x}", LIMIT),
    Payload("op_step", "ordereddict_colliding", "import collections\n" + _COLLIDE + "d = collections.OrderedDict(zip(x, x))", LIMIT),
    Payload("op_step", "defaultdict_colliding", "import collections\n" + _COLLIDE + "d = collections.defaultdict(int, zip(x, x))", LIMIT),
    Payload("op_step", "ordereddict_fromkeys_colliding", "import collections\n" + _COLLIDE + "d = collections.OrderedDict.fromkeys(x)", LIMIT),
    Payload("op_step", "statistics_median_long_texts", "import statistics\n" + _LONG + "x = statistics.median_low([a, b] * 10**5)", LIMIT),
    # stepped paths keyed on exact types, unbound methods, operator/bisect/heapq, deques, chains (red team of 89682e6)
    Payload("op_step", 'list_subclass_eq_plain', _SAME + 'class L(list):\n    pass\nr = L([a] * 10**5) == [b] * 10**5', LIMIT),
    Payload("op_step", 'plain_eq_list_subclass', _SAME + 'class L(list):\n    pass\nr = [a] * 10**5 == L([b] * 10**5)', LIMIT),
    Payload("op_step", 'tuple_subclass_lt_plain', _SAME + 'class T(tuple):\n    pass\nr = T([a] * 10**5 + [1]) < tuple([b] * 10**5 + [2])', LIMIT),
    Payload("op_step", 'defaultdict_eq_dict', _SAME + 'import collections\nd = collections.defaultdict(int, {i: a for i in range(10**5)})\nr = d == {i: b for i in range(10**5)}', LIMIT),
    Payload("op_step", 'ordereddict_eq_dict', _SAME + 'import collections\nd = collections.OrderedDict((i, a) for i in range(10**5))\nr = d == {i: b for i in range(10**5)}', LIMIT),
    Payload("op_step", 'ordereddict_eq_ordereddict', _SAME + 'import collections\nd = collections.OrderedDict((i, a) for i in range(10**5))\ne = collections.OrderedDict((i, b) for i in range(10**5))\nr = d == e', LIMIT),
    Payload("op_step", 'in_iterator', _SAME + 'r = c in iter([a] * 10**5)', LIMIT),
    Payload("op_step", 'in_dict_values', _SAME + 'r = c in {i: a for i in range(10**5)}.values()', LIMIT),
    Payload("op_step", 'in_dict_items', _SAME + 'r = (1, [b] * 10**5) in {1: [a] * 10**5}.items()', LIMIT),
    Payload("op_step", 'in_list_subclass', _SAME + 'class L(list):\n    pass\nr = c in L([a] * 10**5)', LIMIT),
    Payload("op_step", 'in_zip', _SAME + 'r = (1, c) in zip([1] * 10**5, [a] * 10**5)', LIMIT),
    Payload("op_step", 'unbound_list_count', _SAME + 'r = list.count([a] * 10**5, b)', LIMIT),
    Payload("op_step", 'unbound_list_index', _SAME + 'r = list.index([a] * 10**5, c)', LIMIT),
    Payload("op_step", 'unbound_list_remove', _SAME + 'x = [a] * 10**5\nlist.remove(x, c)', LIMIT),
    Payload("op_step", 'unbound_list_sort', _SAME + 'x = [a, c] * 10**5\nlist.sort(x)', LIMIT),
    Payload("op_step", 'unbound_tuple_count', _SAME + 'r = tuple.count(tuple([a] * 10**5), b)', LIMIT),
    Payload("op_step", 'unbound_tuple_index', _SAME + 'r = tuple.index(tuple([a] * 10**5), c)', LIMIT),
    Payload("op_step", 'subclass_count', _SAME + 'class L(list):\n    pass\nr = L([a] * 10**5).count(b)', LIMIT),
    Payload("op_step", 'subclass_index', _SAME + 'class L(list):\n    pass\nr = L([a] * 10**5).index(c)', LIMIT),
    Payload("op_step", 'subclass_remove', _SAME + 'class L(list):\n    pass\nx = L([a] * 10**5)\nx.remove(c)', LIMIT),
    Payload("op_step", 'super_eq', _SAME + 'class M(list):\n    def __eq__(self, o):\n        return super().__eq__(o)\nr = M([a] * 10**5) == M([b] * 10**5)', LIMIT),
    Payload("op_step", 'super_contains', _SAME + 'class M(list):\n    def __contains__(self, v):\n        return super().__contains__(v)\nr = c in M([a] * 10**5)', LIMIT),
    Payload("op_step", 'super_lt', _SAME + 'class M(tuple):\n    def __lt__(self, o):\n        return super().__lt__(o)\nr = M([a] * 10**5 + [1]) < M([b] * 10**5 + [2])', LIMIT),
    Payload("op_step", 'super_count', _SAME + 'class M(list):\n    def count(self, v):\n        return super().count(v)\nr = M([a] * 10**5).count(b)', LIMIT),
    Payload("op_step", 'operator_eq', _SAME + 'import operator\nr = operator.eq([a] * 10**5, [b] * 10**5)', LIMIT),
    Payload("op_step", 'operator_ne', _SAME + 'import operator\nr = operator.ne([a] * 10**5, [b] * 10**5)', LIMIT),
    Payload("op_step", 'operator_lt', _SAME + 'import operator\nr = operator.lt([a] * 10**5 + [1], [b] * 10**5 + [2])', LIMIT),
    Payload("op_step", 'operator_contains', _SAME + 'import operator\nr = operator.contains([a] * 10**5, c)', LIMIT),
    Payload("op_step", 'operator_countof', _SAME + 'import operator\nr = operator.countOf([a] * 10**5, b)', LIMIT),
    Payload("op_step", 'operator_indexof', _SAME + 'import operator\nr = operator.indexOf([a] * 10**5, c)', LIMIT),
    Payload("op_step", 'map_list_count', _SAME + 'r = list(map(list.count, [[a] * 10**5], [b]))', LIMIT),
    Payload("op_step", 'partial_list_count', _SAME + 'import functools\nr = functools.partial(list.count, [a] * 10**5)(b)', LIMIT),
    Payload("op_step", 'deque_eq', _SAME + 'import collections\nr = collections.deque([a] * 10**5) == collections.deque([b] * 10**5)', LIMIT),
    Payload("op_step", 'deque_lt', _SAME + 'import collections\nr = collections.deque([a] * 10**5 + [1]) < collections.deque([b] * 10**5 + [2])', LIMIT),
    Payload("op_step", 'deque_in', _SAME + 'import collections\nr = c in collections.deque([a] * 10**5)', LIMIT),
    Payload("op_step", 'deque_count', _SAME + 'import collections\nr = collections.deque([a] * 10**5).count(b)', LIMIT),
    Payload("op_step", 'deque_index', _SAME + 'import collections\nr = collections.deque([a] * 10**5).index(c)', LIMIT),
    Payload("op_step", 'deque_remove', _SAME + 'import collections\nx = collections.deque([a] * 10**5)\nx.remove(c)', LIMIT),
    Payload("op_step", 'bisect_lists', _SAME + 'import bisect\nrows = [[a] * 10**5 + [i] for i in range(8)]\nr = bisect.bisect(rows, [b] * 10**5 + [3])', LIMIT),
    Payload("op_step", 'insort_lists', _SAME + 'import bisect\nrows = [[a] * 10**5 + [i] for i in range(8)]\nbisect.insort(rows, [b] * 10**5 + [3])', LIMIT),
    Payload("op_step", 'heappush_lists', _SAME + 'import heapq\nh = [[a] * 10**5 + [i] for i in range(8)]\nheapq.heappush(h, [b] * 10**5)', LIMIT),
    Payload("op_step", 'heapify_lists', _SAME + 'import heapq\nh = [[(a, b)[i % 2]] * 10**5 + [8 - i] for i in range(8)]\nheapq.heapify(h)', LIMIT),
    Payload("op_step", 'heappop_lists', _SAME + 'import heapq\nh = [[(a, b)[i % 2]] * 10**5 + [i] for i in range(8)]\nr = heapq.heappop(h)', LIMIT),
    Payload("op_step", 'nsmallest_lists', _SAME + 'import heapq\nr = heapq.nsmallest(2, [[(a, b)[i % 2]] * 10**5 + [8 - i] for i in range(8)])', LIMIT),
    Payload("op_step", 'merge_lists', _SAME + 'import heapq\nr = list(heapq.merge([[a] * 10**5 + [1]], [[b] * 10**5 + [2]]))', LIMIT),
    Payload("op_step", "in_ordereddict_items", _SAME + "import collections\nr = (1, [b] * 10**5) in collections.OrderedDict({1: [a] * 10**5}).items()", LIMIT),
    Payload("op_step", "groupby_lists", _SAME + "import itertools\nr = list(itertools.groupby([[a] * 10**5, [b] * 10**5]))", LIMIT),
    Payload("op_step", "set_tuples_eq", _SAME + "r = {(a, i) for i in range(10**5)} == {(b, i) for i in range(10**5)}", LIMIT),
    Payload("op_step", "tuple_in_set", _SAME + "t = (a,) * 10**5\nr = t in {(b,) * 10**5}", LIMIT),
    Payload("op_step", "dict_tuple_keys_eq", _SAME + "r = {(a, i): 0 for i in range(10**5)} == {(b, i): 0 for i in range(10**5)}", LIMIT),
    Payload("op_step", "dict_items_eq", _SAME + "r = {i: a for i in range(10**5)}.items() == {i: b for i in range(10**5)}.items()", LIMIT),
    Payload("op_step", 'chain_inner_call', _SAME + 'def f(v):\n    return [v] * 10**5\nr = f(a) == f(b) == f(a)', LIMIT),
    Payload("op_step", 'chain_inner_subscript', _SAME + 'x = [[a] * 10**5, [b] * 10**5]\nr = x[0] == x[1] == 0', LIMIT),
    # light keys, hashed containers by class, keys views, set subclasses (red team 4 of 967b354)
    Payload("op_step", "nsmallest_texts", _SAME + "import heapq\nr = heapq.nsmallest(10**5, [a, c] * 5 * 10**4)", LIMIT),
    Payload("op_step", "nlargest_texts", _SAME + "import heapq\nr = heapq.nlargest(5 * 10**4, [a, c] * 5 * 10**4)", LIMIT),
    Payload("op_step", "merge_many_texts", _SAME + "import heapq\nr = list(heapq.merge(*[[a], [b]] * 5 * 10**4))", LIMIT),
    Payload("op_step", "keys_views_eq", _SAME + "r = {(a, i): 0 for i in range(10**5)}.keys() == {(b, i): 0 for i in range(10**5)}.keys()", LIMIT),
    Payload("op_step", "keys_view_le_set", _SAME + "r = {(a, i): 0 for i in range(10**5)}.keys() <= {(b, i) for i in range(10**5)}", LIMIT),
    Payload("op_step", "set_eq_keys_view", _SAME + "r = {(a, i) for i in range(10**5)} == {(b, i): 0 for i in range(10**5)}.keys()", LIMIT),
    Payload("op_step", "set_subclass_eq", _SAME + "class S(set):\n    pass\nr = S({(a, i) for i in range(10**5)}) == S({(b, i) for i in range(10**5)})", LIMIT),
    Payload("op_step", "tuple_in_keys_view", _SAME + "r = (a,) * 10**5 in {(b,) * 10**5: 1}.keys()", LIMIT),
    Payload("op_step", "tuple_in_set_subclass", _SAME + "class S(set):\n    pass\nr = (a,) * 10**5 in S({(b,) * 10**5})", LIMIT),
    Payload("op_step", "tuple_in_defaultdict", _SAME + "import collections\nr = (a,) * 10**5 in collections.defaultdict(int, {(b,) * 10**5: 1})", LIMIT),
    Payload("op_step", "tuple_in_counter", _SAME + "import collections\nr = (a,) * 10**5 in collections.Counter({(b,) * 10**5: 1})", LIMIT),
    Payload("op_step", "items_view_eq_set", _SAME + "r = {1: (a,) * 10**5}.items() == {(1, (b,) * 10**5)}", LIMIT),
    Payload("op_step", "set_le_items_view", _SAME + "r = {(1, (b,) * 10**5)} <= {1: (a,) * 10**5}.items()", LIMIT),
    Payload("op_step", "frozenset_in_set", _SAME + "r = frozenset([(a,) * 10**5]) in {frozenset([(b,) * 10**5])}", LIMIT),
    Payload("op_step", 'max_deques', _SAME + 'import collections\nr = max([collections.deque([a] * 10**5 + [1]), collections.deque([b] * 10**5 + [2])])', LIMIT),
]
# Hashing (sandbox/keys.py): tuples equal but made separately (equal hash, distinct objects: each key
# comparison after a hash match is 2*10**5 memcmp of 10**7 bytes, about a minute in one C call); `tc`/`td` are
# unequal but hash alike (2**61 - 1 hashes to 0), so a new key is compared in C with the stored one.
_KEYS = _SAME + "ta = (a,) * 2 * 10**5\ntb = (b,) * 2 * 10**5\nM = 2**61 - 1\ntc = ta + (M,)\ntd = tb + (2 * M,)\n"
# A tuple nested with sharing: 2**60 leaves for one C hash; one nested 200 000 deep (C's hash recursed until
# SIGSEGV).
_SHARED_NEST = "t = ()\nfor _ in range(60):\n    t = (t, t)\n"
_DEEP = "t = ()\nfor _ in range(200000):\n    t = (t,)\n"
HASH_ATTACKS: list[Payload] = [
    Payload("op_step", "hash_getitem", _KEYS + "d = {ta: 1}\nr = d[tb]", LIMIT),
    Payload("op_step", "hash_getitem_missing", _KEYS + "d = {tc: 1}\nr = d[td]", LIMIT),
    Payload("op_step", "hash_get", _KEYS + "d = {ta: 1}\nr = d.get(tb)", LIMIT),
    Payload("op_step", "hash_setitem", _KEYS + "d = {ta: 1}\nd[tb] = 2", LIMIT),
    Payload("op_step", "hash_setitem_new", _KEYS + "d = {tc: 1}\nd[td] = 2", LIMIT),
    Payload("op_step", "hash_setitem_attr", _KEYS + "class C:\n    pass\no = C()\no.d = {ta: 1}\no.d[tb] = 2", LIMIT),
    Payload("op_step", "hash_delitem", _KEYS + "d = {ta: 1}\ndel d[tb]", LIMIT),
    Payload("op_step", "hash_augassign", _KEYS + "d = {ta: 1}\nd[tb] += 1", LIMIT),
    Payload("op_step", "hash_setdefault", _KEYS + "d = {ta: 1}\nr = d.setdefault(tb, 0)", LIMIT),
    Payload("op_step", "hash_pop", _KEYS + "d = {ta: 1}\nr = d.pop(tb)", LIMIT),
    Payload("op_step", "hash_set_add", _KEYS + "s = {ta}\ns.add(tb)", LIMIT),
    Payload("op_step", "hash_set_add_new", _KEYS + "s = {tc}\ns.add(td)", LIMIT),
    Payload("op_step", "hash_set_discard", _KEYS + "s = {ta}\ns.discard(tb)", LIMIT),
    Payload("op_step", "hash_set_remove", _KEYS + "s = {ta}\ns.remove(tb)", LIMIT),
    Payload("op_step", "hash_nested_dict_key", _SHARED_NEST + "d = {}\nd[t] = 1", LIMIT),
    Payload("op_step", "hash_nested_get", _SHARED_NEST + "r = {}.get(t)", LIMIT),
    Payload("op_step", "hash_nested_set_add", _SHARED_NEST + "s = set()\ns.add(t)", LIMIT),
    Payload("op_step", "hash_deep_dict_key", _DEEP + "d = {}\nd[t] = 1", LIMIT),
    Payload("op_step", "hash_deep_hash", _DEEP + "r = hash(t)", LIMIT),
    Payload("op_step", "hash_deep_in_set", _DEEP + "r = t in {1}", LIMIT),
    Payload("op_step", "hash_dict_display", _KEYS + "r = {ta: 1, tb: 2}", LIMIT),
    Payload("op_step", "hash_dict_unpack", _KEYS + "d = {ta: 1}\ne = {tb: 2}\nr = {**d, **e}", LIMIT),
    Payload("op_step", "hash_dict_update", _KEYS + "d = {ta: 1}\nd.update({tb: 2})", LIMIT),
    Payload("op_step", "hash_dict_comp", _KEYS + "r = {k: 1 for k in [ta, tb]}", LIMIT),
    Payload("op_step", "hash_set_display", _KEYS + "r = {ta, tb}", LIMIT),
    Payload("op_step", "hash_set_call", _KEYS + "r = set([ta, tb])", LIMIT),
    Payload("op_step", "hash_set_comp", _KEYS + "r = {k for k in [ta, tb]}", LIMIT),
    Payload("op_step", "hash_fromkeys", _KEYS + "r = dict.fromkeys([ta, tb])", LIMIT),
    Payload("op_step", "hash_counter", _KEYS + "import collections\nr = collections.Counter([ta, tb])", LIMIT),
    Payload("op_step", "hash_union", _KEYS + "r = {ta}.union([tb])", LIMIT),
    Payload("op_step", "hash_nested_display", _SHARED_NEST + "r = {t: 1}", LIMIT),
    Payload("op_step", "hash_nested_comp", _SHARED_NEST + "r = {k: 1 for k in [t]}", LIMIT),
    Payload("op_step", "hash_dict_or", _KEYS + "d = {ta: 1}\ne = {tb: 2}\nr = d | e", LIMIT),
    Payload("op_step", "hash_dict_ior", _KEYS + "d = {ta: 1}\nd |= {tb: 2}", LIMIT),
    Payload("op_step", "hash_set_and", _KEYS + "r = {ta} & {tb}", LIMIT),
    Payload("op_step", "hash_set_or", _KEYS + "r = {ta} | {tb}", LIMIT),
    Payload("op_step", "hash_set_sub", _KEYS + "r = {ta} - {tb}", LIMIT),
    Payload("op_step", "hash_set_xor", _KEYS + "r = {ta} ^ {tb}", LIMIT),
    Payload("op_step", "hash_set_iand", _KEYS + "s = {ta}\ns &= {tb}", LIMIT),
    Payload("op_step", "hash_set_isub", _KEYS + "s = {ta}\ns -= {tb}", LIMIT),
    Payload("op_step", "hash_set_ior", _KEYS + "s = {ta}\ns |= {tb}", LIMIT),
    Payload("op_step", "hash_set_ixor", _KEYS + "s = {ta}\ns ^= {tb}", LIMIT),
    Payload("op_step", "hash_frozenset_and", _KEYS + "r = frozenset([ta]) & frozenset([tb])", LIMIT),
    Payload("op_step", "hash_issubset", _KEYS + "r = {ta}.issubset({tb})", LIMIT),
    Payload("op_step", "hash_issuperset", _KEYS + "r = {ta}.issuperset({tb})", LIMIT),
    Payload("op_step", "hash_isdisjoint", _KEYS + "r = {ta}.isdisjoint({tb})", LIMIT),
    Payload("op_step", "hash_intersection", _KEYS + "r = {ta}.intersection([tb])", LIMIT),
    Payload("op_step", "hash_difference", _KEYS + "r = {ta}.difference([tb])", LIMIT),
    Payload("op_step", "hash_symmetric_difference", _KEYS + "r = {ta}.symmetric_difference({tb})", LIMIT),
    Payload("op_step", "hash_difference_update", _KEYS + "s = {ta}\ns.difference_update([tb])", LIMIT),
    Payload("op_step", "hash_intersection_update", _KEYS + "s = {ta}\ns.intersection_update([tb])", LIMIT),
    Payload("op_step", "hash_keys_and", _KEYS + "r = {ta: 1}.keys() & {tb: 2}.keys()", LIMIT),
    Payload("op_step", "hash_keys_or", _KEYS + "r = {ta: 1}.keys() | {tb: 2}.keys()", LIMIT),
    Payload("op_step", "hash_keys_sub", _KEYS + "r = {ta: 1}.keys() - {tb}", LIMIT),
    Payload("op_step", "hash_keys_xor", _KEYS + "r = {ta: 1}.keys() ^ {tb: 2}.keys()", LIMIT),
    Payload("op_step", "hash_items_and", _KEYS + "r = {1: ta}.items() & {1: tb}.items()", LIMIT),
    Payload("op_step", "hash_lru_cache", _KEYS + "import functools\n@functools.lru_cache(maxsize=None)\ndef f(x):\n    return 1\nf(ta)\nr = f(tb)", LIMIT),
    Payload("op_step", "hash_cache", _KEYS + "import functools\n@functools.cache\ndef f(x):\n    return 1\nf(ta)\nr = f(tb)", LIMIT),
]
STEP_CONTROLS: list[Payload] = [
    Payload("control", "bulk_classes_ok",
            "class S(set):\n    pass\nprint(set('abca') == {'a', 'b', 'c'}, type(set()) is set, isinstance(frozenset(), frozenset), "
            "set[int], dict(a=1), dict([(1, 2)], b=3), dict.fromkeys('ab', 0), {}.fromkeys('c'), sorted(S([2, 1]) | {3}), "
            "dict.mro(), len(set(range(10**5))))",
            OK, match="True True True set[int] {'a': 1} {1: 2, 'b': 3} {'a': 0, 'b': 0} {'c': None} [1, 2, 3] [<class 'dict'>, <class 'object'>] 100000"),
    Payload("control", "bulk_dataclass_ok",
            "import dataclasses, collections, json\n@dataclasses.dataclass\nclass P:\n    d: dict = dataclasses.field(default_factory=dict)\n"
            "print(P(), collections.defaultdict(set)['k'], json.dumps(dict(x=[1])), isinstance(collections.OrderedDict(), dict))",
            OK, match='P(d={}) set() {"x": [1]} True'),
    Payload("control", "ordering_ok",
            "x = [3, 1, 2]\nx.sort(reverse=True)\nt = 'y' * 200\nprint(x, sorted([t + 'b', t + 'a'])[0][-1], max([1, 1.0]), min([1.0, 1]), "
            "sorted([(1, 'b'), (1, 'a')]), max('abc', key=ord), min([], default=7), min(3, 1, 2), sorted([2, 1], key=lambda v: -v), "
            "max([[1], [3]]), sorted([1, 1.0, True]))",
            OK, match="[3, 2, 1] a 1 1.0 [(1, 'a'), (1, 'b')] c 7 1 [2, 1] [3] [1, 1.0, True]"),
    Payload("control", "bulk_methods_ok",
            "import collections\ns = {1, 2}\ns.update([3], (4,), {5: 0})\nd = {'a': 1}\nd.update([('b', 2)], c=3)\nd.update({'e': 5})\n"
            "o = collections.OrderedDict(a=1)\no.update(b=2)\ndict.update(d, z=0)\n"
            "print(sorted(s), d, list(o.items()), frozenset({1}).union([2], {3}), {1}.issubset([1, 2]), {1, 2}.symmetric_difference([2, 3]), set.union({1}, [4]))",
            OK, match="[1, 2, 3, 4, 5] {'a': 1, 'b': 2, 'c': 3, 'e': 5, 'z': 0} [('a', 1), ('b', 2)] frozenset({1, 2, 3}) True {1, 3} {1, 4}"),
    Payload("control", "compare_ok",
            "x = [1, [2, 'a'], (3.5, None)]\ny = list(x)\nn = float('nan')\nz = [n]\nk = 'ab'\n"
            "print(x == y, x != y, x < y + [0], [n] == z, z < [n], 2 in x, [2, 'a'] in x, x.count(3), x.index([2, 'a']), "
            "(1, 2) < (1, 3) < (2,), k in ['ab'], hash((1, (2, 3))) == hash((1, (2, 3))), y.remove(1), y)\n"
            "try:\n    [1] < ['a']\nexcept TypeError as e:\n    print('TypeError')",
            OK, match="True False True True False False True 0 1 True True True None [[2, 'a'], (3.5, None)]\nTypeError"),
    Payload("control", "stepped_routes_ok",
            "import collections, bisect, heapq, operator, functools\nclass L(list):\n    pass\nclass N(list):\n    def __eq__(self, o):\n        return super().__eq__(o)\n"
            "d = collections.deque([1, [2], 'a'])\nx = [[1], [2], [2]]\nlist.remove(x, [2])\ny = [3, 1, 2]\nlist.sort(y)\nh = []\nfor v in [[5], [1], [3]]:\n    heapq.heappush(h, v)\n"
            "def f(v):\n    return v\n"
            "print(L([1]) == [1], [[2]] < L([[3]]), d == collections.deque([1, [2], 'a']), [2] in d, d.count([2]), d.index('a'), x, y, list.count([[1]] * 3, [1]), "
            "tuple.index(([1], [2]), [2]), operator.eq([1], [1]), operator.countOf(iter([[1], [1]]), [1]), operator.indexOf([[0], [1]], [1]), "
            "[heapq.heappop(h) for _ in range(3)], bisect.bisect([[1], [3]], [2]), heapq.nsmallest(1, [[3], [1]]), list(map(list.count, [[[1]]], [[1]])), "
            "functools.partial(list.index, [[0], [1]])([1]), collections.OrderedDict(a=1, b=2) == collections.OrderedDict(b=2, a=1), "
            "collections.defaultdict(int, a=[1]) == {'a': [1]}, [1] in {1: [1]}.values(), ('a', [1]) in {'a': [1]}.items(), N([[1]]) == [[1]], "
            "f(1) < f(2) < f(3), [v for v in range(4) if 0 < f(v) < 3], [1] in iter([[0], [1]]))",
            OK, match="True True True True 1 2 [[1], [2]] [1, 2, 3] 3 1 True 2 1 [[1], [3], [5]] 1 [[1]] [1] 1 False True True True True True [1, 2] True"),
    Payload("control", "set_display_ordered_ok",
            "import collections\nd = collections.defaultdict(list, a=1)\nd['b'].append(2)\no = collections.OrderedDict([(1, 2)], z=3)\nk = 'ab'\n"
            "print(d, o, type(o) is collections.OrderedDict, isinstance(d, dict), collections.OrderedDict, sorted({1, *'ab', 2}, key=str), "
            "{(1, (2, 3)), k}  == {k, (1, (2, 3))}, collections.defaultdict(), collections.OrderedDict.fromkeys(k), type(d).__name__)",
            OK, match="defaultdict(<class 'list'>, {'a': 1, 'b': [2]}) OrderedDict([(1, 2), ('z', 3)]) True True <class 'collections.OrderedDict'> "
            "[1, 2, 'a', 'b'] True defaultdict(None, {}) OrderedDict([('a', None), ('b', None)]) defaultdict"),
    Payload("control", "normalize_ok",
            "import unicodedata\nt = 'Cafe\\u0301 \\ufb01' * 100000\nx = unicodedata.normalize('NFC', t)\n"
            "print(len(x), x[:6], unicodedata.normalize('NFKD', '\\ufb01'))",
            OK, match="600000 Café ﬁ fi"),
]
# fmt: on

# Library code written in Python that compares a cell's values with a plain `==` or `in` (not rewritten by the
# policy): UserList, the Mapping/Sequence/view mixins, UserDict, ChainMap, Counter, dataclasses' generated
# methods. Each was one C comparison of two lists of 10**5 equal 10**7-character texts (> 25 s for a 1 s limit;
# sandbox/library_compare.py steps them).
_LIB = _SAME + "import collections, collections.abc, dataclasses\nA = [a] * 10**5\nB = [b] * 10**5\n"
_SEQ = (
    "class S(collections.abc.Sequence):\n    def __init__(self, items):\n        self.items = items\n"
    "    def __getitem__(self, i):\n        return self.items[i]\n    def __len__(self):\n        return len(self.items)\n"
)
_MAP = (
    "class M(collections.abc.Mapping):\n    def __init__(self, d):\n        self.d = d\n"
    "    def __getitem__(self, k):\n        return self.d[k]\n    def __len__(self):\n        return len(self.d)\n"
    "    def __iter__(self):\n        return iter(self.d)\n"
)
# fmt: off
LIBRARY_COMPARE_ATTACKS: list[Payload] = [
    Payload("op_step", "userlist_eq", _LIB + "r = collections.UserList(A) == collections.UserList(B)", LIMIT),
    Payload("op_step", "userlist_ne_list", _LIB + "r = collections.UserList(A) != B", LIMIT),
    Payload("op_step", "userlist_lt", _LIB + "r = collections.UserList(A + [1]) < collections.UserList(B + [2])", LIMIT),
    Payload("op_step", "userlist_subclass_ge", _LIB + "class U(collections.UserList):\n    pass\nr = U(A + [2]) >= U(B + [1])", LIMIT),
    Payload("op_step", "userlist_contains", _LIB + "r = B in collections.UserList([A])", LIMIT),
    Payload("op_step", "userlist_count", _LIB + "r = collections.UserList([A]).count(B)", LIMIT),
    Payload("op_step", "userlist_index", _LIB + "r = collections.UserList([A, B]).index(B, 0)", LIMIT),
    Payload("op_step", "userlist_remove", _LIB + "u = collections.UserList([A, B])\nu.remove(B)", LIMIT),
    Payload("op_step", "userdict_eq", _LIB + "r = collections.UserDict({1: A}) == collections.UserDict({1: B})", LIMIT),
    Payload("op_step", "chainmap_eq_dict", _LIB + "r = collections.ChainMap({1: A}) == {1: B}", LIMIT),
    Payload("op_step", "mapping_subclass_eq", _LIB + _MAP + "r = M({1: A}) == M({1: B})", LIMIT),
    Payload("op_step", "sequence_mixin_contains", _LIB + _SEQ + "r = B in S([A])", LIMIT),
    Payload("op_step", "sequence_mixin_index", _LIB + _SEQ + "r = S([A]).index(B)", LIMIT),
    Payload("op_step", "sequence_mixin_count", _LIB + _SEQ + "r = S([A]).count(B)", LIMIT),
    Payload("op_step", "values_view_mixin_contains", _LIB + "r = B in collections.UserDict({1: A}).values()", LIMIT),
    Payload("op_step", "items_view_mixin_contains", _LIB + _MAP + "r = (1, B) in M({1: A}).items()", LIMIT),
    Payload("op_step", "counter_eq", _LIB + "r = collections.Counter({1: A}) == collections.Counter({1: B})", LIMIT),
    Payload("op_step", "counter_lt", _LIB + "r = collections.Counter({1: A + [1]}) < collections.Counter({1: B + [2]})", LIMIT),
    Payload("op_step", "dataclass_eq", _LIB + "@dataclasses.dataclass\nclass D:\n    x: list\nr = D(A) == D(B)", LIMIT),
    Payload("op_step", "dataclass_order", _LIB + "@dataclasses.dataclass(order=True)\nclass D:\n    x: list\nr = D(A + [1]) < D(B + [2])", LIMIT),
    Payload("op_step", "dataclass_slots_eq", _LIB + "@dataclasses.dataclass(slots=True)\nclass D:\n    x: list\nr = D(A) == D(B)", LIMIT),
    Payload("op_step", "dataclass_frozen_hash_nested", _NESTED + "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass F:\n    t: tuple\nr = hash(F(t))", LIMIT),
    Payload("op_step", "dataclass_frozen_set", _NESTED + "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass F:\n    t: tuple\nr = {F(t)}", LIMIT),
]
# json's one-shot C encoder (red team 7): a tuple nested with sharing is 2**40 visits in one C call (the
# CPU backstop killed the kernel); now such a value takes the Python encoder, which the limit stops.
JSON_ATTACKS: list[Payload] = [
    Payload("op_step", "json_dumps_shared_nest", _SHARED_NEST + "import json\nr = json.dumps(t)", LIMIT),
    Payload("op_step", "json_encoder_encode_shared_nest", _SHARED_NEST + "import json\nr = json.JSONEncoder().encode(t)", LIMIT),
    Payload("op_step", "json_iterencode_one_shot", _SHARED_NEST + "import json\nr = ''.join(json.JSONEncoder().iterencode(t, True))", LIMIT),
    Payload("op_step", "json_dumps_cell_encoder", _SHARED_NEST + "import json\nclass E(json.JSONEncoder):\n    pass\nr = json.dumps(t, cls=E)", LIMIT),
    Payload("op_step", "json_dumps_shared_dicts", "import json\nd = {}\nfor _ in range(40):\n    d = {'a': d, 'b': d}\nr = json.dumps(d)", LIMIT),
    Payload("op_step", "json_dumps_control", "import json\nclass E(json.JSONEncoder):\n    def default(self, o):\n        return str(o)\nprint(json.dumps({'a': [1, (2, 3), None]}), json.dumps({1}, cls=E), len(json.dumps(list(range(10**5)))))", OK, match='{"a": [1, [2, 3], null]} "{1}" 688890'),
]
LIBRARY_COMPARE_CONTROLS: list[Payload] = [
    Payload("control", "library_compare_ok",
            "import collections, collections.abc, dataclasses\n" + _SEQ + _MAP +
            "@dataclasses.dataclass(order=True, frozen=True)\nclass P:\n    x: int\n    y: str = dataclasses.field(default='a', compare=False)\n"
            "@dataclasses.dataclass\nclass Q:\n    v: list\n    def __eq__(self, o):\n        return 'own'\n"
            "u = collections.UserList([1, [2], 'a'])\nu.remove([2])\nn = float('nan')\n"
            "print(u == [1, 'a'], u < [2], u != collections.UserList([1]), [2] in collections.UserList([[2]]), u.count('a'), u.index('a'), "
            "collections.UserDict(a=[1]) == {'a': [1]}, collections.ChainMap({1: 2}, {3: 4}) == {1: 2, 3: 4}, 3 in collections.ChainMap({}, {3: 4}), "
            "M({1: [2]}) == {1: [2]}, M({1: 2}) == M({1: 3}), [2] in S([[1], [2]]), S([1, 2, 1]).index(1, 1), S([1, 1]).count(1), n in S([n]), "
            "[1] in collections.UserDict(a=[1]).values(), ('a', [1]) in M({'a': [1]}).items(), ('b', 1) in M({}).items(), "
            "collections.Counter('aab') == collections.Counter('aba'), collections.Counter('a') < collections.Counter('ab'), collections.Counter() <= collections.Counter('a'), "
            "P(1) == P(1, 'b'), P(1) < P(2), hash(P(1)) == hash(P(1, 'z')), len({P(1), P(1)}), Q([1]) == Q([2]), P(1) == (1,), sorted([P(3), P(1)])[0].x)",
            OK, match="True True True True 1 1 True True True True False True 2 2 True True True False True True True True True True 1 own False 1"),
]

# fmt: off
PAYLOADS: list[Payload] = [
    # -- dunder walks ---------------------------------------------------------------------------------------
    _P("dunder", "subclasses", "().__class__.__bases__[0].__subclasses__()", REFUSED),
    _P("dunder", "mro", "[].__class__.__mro__[-1].__subclasses__()", REFUSED),
    _P("dunder", "func_globals", "f = lambda: 0\nf.__globals__", REFUSED),
    _P("dunder", "builtin_self", "len.__self__", REFUSED),
    _P("dunder", "dict", "class A: pass\nA().__dict__", REFUSED),
    _P("dunder", "reduce_ex", "(1).__reduce_ex__(2)", REFUSED),
    _P("dunder", "code_consts", "def f(): return 1\nf.__code__.co_consts", REFUSED),
    _P("dunder", "object_subclasses", "object.__subclasses__()", REFUSED),
    _P("dunder", "builtins_name", "__builtins__", REFUSED),
    _P("dunder", "import_name", "__import__('os')", REFUSED),
    _P("dunder", "class_getitem", "list.__class_getitem__", REFUSED),
    _P("dunder", "init_subclass_def", "class A:\n    def __init_subclass__(cls): pass", REFUSED),
    _P("dunder", "getattribute_def", "class A:\n    def __getattribute__(self, n): return 1", REFUSED),
    _P("dunder", "del_def", "class A:\n    def __del__(self):\n        while True: pass", REFUSED),
    _P("dunder", "super_walk", "class A:\n    def f(self):\n        return super().__thisclass__\nA().f()", REFUSED),
    _P("dunder", "super_two_args", "import json\nsuper(json.JSONDecoder, json.JSONDecoder()).__init__", REFUSED),
    _P("dunder", "super_getattr_foreign", "getattr(super(list, []), '__setitem__')", REFUSED),
    # `dict` in a cell is the checked class (bulk.py): super() of it with a real dict is Python's TypeError
    _P("dunder", "super_getattr_foreign_dict", "getattr(super(dict, {}), '__setitem__')", BLOCKED),
    _P("dunder", "repr_hook_foreign", "[1]._repr_html_()", REFUSED),
    _P("dunder", "name_is_text_only", "def f(): pass\nf.__name__ = 'x'", REFUSED),
    # -- computed attribute names ------------------------------------------------------------------------
    _P("computed", "getattr_concat", "getattr((), '__cl' + 'ass__')", REFUSED),
    _P("computed", "getattr_chr", "getattr(1, chr(95) * 2 + 'class' + chr(95) * 2)", REFUSED),
    _P("computed", "getattr_default", "getattr((), '__class__', None)", REFUSED),
    _P("computed", "getattr_frame", "g = (x for x in [1])\ngetattr(g, 'gi' + '_frame')", REFUSED),
    _P("computed", "getattr_private_foreign", "import json\ngetattr(json.JSONDecoder(), '_' + 'scanner')", REFUSED),
    _P("computed", "getattr_str_subclass",
       "class S(str):\n    def startswith(self, *a):\n        return False\ngetattr(1, S('__class__'))", BLOCKED),
    _P("computed", "setattr_class", "class A: pass\nsetattr(A(), '__class__', int)", REFUSED),
    _P("computed", "delattr_dunder", "class A: pass\ndelattr(A, '__init__')", REFUSED),
    _P("computed", "vars", "vars(1)", REFUSED),
    _P("computed", "vars_no_arg", "vars()", REFUSED),
    _P("computed", "class_of_walk", "x = 1\nx.__class__.__base__", REFUSED),
    _P("computed", "map_getattr", "list(map(getattr, [1], ['__class__']))", REFUSED),
    _P("computed", "dir_hides_private", "print([n for n in dir(1) if n.startswith('_')])", OK, match="[]"),
    # -- format-string traversal ------------------------------------------------------------------------
    _P("format", "str_format_class", "'{0.__class__}'.format(1)", REFUSED),
    _P("format", "str_format_globals", "def f(): pass\n'{0.__globals__}'.format(f)", REFUSED),
    _P("format", "str_format_map", "'{x.__class__.__mro__}'.format_map({'x': 1})", REFUSED),
    _P("format", "str_format_unbound", "str.format('{0.__class__}', 1)", REFUSED),
    _P("format", "str_format_index_walk", "'{0[0].__class__}'.format([1])", REFUSED),
    _P("format", "userstring_format",
       "from collections import UserString\nUserString('{0.__class__}').format(1)", REFUSED),
    _P("format", "userstring_format_map",
       "import collections\ncollections.UserString('{a.__init__}').format_map({'a': 1})", REFUSED),
    _P("format", "super_str_format", "super(str, '{0.__class__}').format(1)", REFUSED),
    _P("format", "super_subclass_format", "class S(str):\n    pass\nsuper(S, S('{0.__class__}')).format(1)", REFUSED),
    _P("format", "super_method_format", "class S(str):\n    def f(self):\n        return super().format(1)\nS('{0.__class__}').f()", REFUSED),
    _P("format", "super_format_ok", "class S(str):\n    def f(self):\n        return super().format(1)\nprint(S('<{}>').f())", OK, match="<1>"),
    _P("format", "formatter_class", "import string\nstring.Formatter().format('{0.__class__}', 1)", BLOCKED),
    _P("format", "formatter_get_field", "import string\nstring.Formatter().get_field('0.__class__', [1], {})",
       BLOCKED),
    _P("format", "methodcaller_format", "import operator\noperator.methodcaller('format', 1)('{0.__class__}')",
       REFUSED),
    _P("format", "fstring_dunder", "x = 1\nf'{x.__class__}'", REFUSED),
    _P("format", "template_is_safe", "import string\nprint(string.Template('$a-$b').substitute(a=1, b='x'))",
       OK, match="1-x"),
    # -- pivots from every allowlisted module ------------------------------------------------------------
    _P("pivot", "re_enum_sys", "import re\nre.enum.sys.modules['os']", BLOCKED),
    _P("pivot", "re_compiler", "import re\nre.sre_compile", BLOCKED),
    _P("pivot", "re_pattern_is_data", "import re\nprint(re.compile('a+').pattern)", OK, match="a+"),
    _P("pivot", "json_codecs", "import json\njson.codecs.open('{secret_file}').read()", BLOCKED),
    _P("pivot", "json_decoder_module", "import json\njson.decoder.scanstring", BLOCKED),
    _P("pivot", "json_decoder_init_globals", "import json\njson.JSONDecoder.__init__.__globals__", REFUSED),
    _P("pivot", "math_loader", "import math\nmath.__loader__", REFUSED),
    _P("pivot", "math_spec", "import math\ngetattr(math, '__spec__')", REFUSED),
    _P("pivot", "cmath_dict", "import cmath\ncmath.__dict__", REFUSED),
    _P("pivot", "statistics_sys", "import statistics\nstatistics.sys.modules", BLOCKED),
    _P("pivot", "statistics_random", "import statistics\nstatistics.random._os.system('id')", BLOCKED),
    _P("pivot", "collections_sys", "import collections\ncollections._sys.modules", REFUSED),
    _P("pivot", "collections_abc_sys", "import collections.abc\ncollections.abc.sys", BLOCKED),
    _P("pivot", "abc_register", "from collections.abc import Sequence\nSequence.register(int)", REFUSED),
    _P("pivot", "itertools_loader", "import itertools\nitertools.__loader__", REFUSED),
    _P("pivot", "functools_update_wrapper",
       "import functools\nfunctools.update_wrapper(lambda: 0, len, assigned=('__self__',))", BLOCKED),
    _P("pivot", "operator_private", "import operator\noperator._abs", REFUSED),
    _P("pivot", "string_formatter", "import string\nstring.Formatter", BLOCKED),
    _P("pivot", "textwrap_re", "import textwrap\ntextwrap.re.enum.sys", BLOCKED),
    _P("pivot", "difflib_builtins", "import difflib\ngetattr(difflib.SequenceMatcher, '__module__')", REFUSED),
    _P("pivot", "datetime_sys", "import datetime\ndatetime.sys.modules", BLOCKED),
    _P("pivot", "decimal_getcontext", "import decimal\ndecimal.getcontext().prec = 10**9", BLOCKED),
    _P("pivot", "decimal_context_write", "import decimal\nc = decimal.Context()\nc.prec = 10**9", LIMIT),
    _P("pivot", "fractions_math", "import fractions\nfractions.math", BLOCKED),
    _P("pivot", "contextlib_sys", "import contextlib\ncontextlib.sys.modules", BLOCKED),
    _P("pivot", "contextlib_redirect", "import contextlib\ncontextlib.redirect_stdout", BLOCKED),
    _P("pivot", "contextlib_chdir", "from contextlib import chdir", BLOCKED),
    _P("pivot", "contextlib_async", "import contextlib\ncontextlib.AsyncExitStack", BLOCKED),
    _P("pivot", "contextlib_private", "import contextlib\ncontextlib._GeneratorContextManager", REFUSED),
    _P("pivot", "contextlib_wrapped",
       "import contextlib\ndef g():\n    yield\ngetattr(contextlib.contextmanager(g), '__wrap' + 'ped__')", REFUSED),
    _P("pivot", "contextlib_gen_frame",
       "import contextlib\n@contextlib.contextmanager\ndef g():\n    yield\ncm = g()\ngetattr(cm.gen, 'gi_' + 'frame')", REFUSED),
    _P("pivot", "contextlib_exit_traceback",
       "import contextlib\ngot = []\ntry:\n    with contextlib.ExitStack() as st:\n        st.push(lambda t, v, tb: got.append(tb))\n"
       "        1 / 0\nexcept ZeroDivisionError:\n    pass\ngetattr(got[0], 'tb_' + 'frame')", REFUSED),
    _P("pivot", "contextlib_exit_callbacks", "import contextlib\ncontextlib.ExitStack()._exit_callbacks", REFUSED),
    _P("pivot", "contextlib_register", "import contextlib\ncontextlib.AbstractContextManager.register(int)", REFUSED),
    _P("pivot", "contextlib_suppress_timeout",
       "import contextlib\nwhile True:\n    with contextlib.suppress(BaseException):\n        while True:\n            pass", LIMIT),
    _P("pivot", "random_self", "import random\nrandom.random.__self__", REFUSED),
    _P("pivot", "random_os", "import random\nrandom._os", REFUSED),
    _P("pivot", "random_systemrandom", "import random\nrandom.SystemRandom", BLOCKED),
    _P("pivot", "heapq_module", "import heapq\nheapq.heappush.__module__", REFUSED),
    _P("pivot", "bisect_builtin", "import bisect\nbisect.bisect.__self__", REFUSED),
    _P("pivot", "unicodedata_ucd", "import unicodedata\nunicodedata.ucd_3_2_0", BLOCKED),
    _P("pivot", "hashlib_openssl", "import hashlib\nhashlib._hashlib", REFUSED),
    _P("pivot", "hashlib_file_digest", "import hashlib\nhashlib.file_digest", BLOCKED),
    _P("pivot", "base64_binascii", "import base64\nbase64.binascii", BLOCKED),
    _P("pivot", "csv_open", "import csv\nlist(csv.reader(open('{secret_file}')))", REFUSED),
    _P("pivot", "csv_register_dialect", "import csv\ncsv.register_dialect('x', delimiter=';')", BLOCKED),
    _P("pivot", "pprint_printer", "import pprint\npprint.PrettyPrinter", BLOCKED),
    _P("pivot", "pprint_sys", "import pprint\npprint._sys", REFUSED),
    _P("pivot", "typing_get_type_hints",
       "import typing\nclass A:\n    x: 'print(1)'\ntyping.get_type_hints(A)", BLOCKED),
    _P("pivot", "typing_forwardref", "import typing\ntyping.ForwardRef('1')", BLOCKED),
    _P("pivot", "typing_sys", "import typing\ntyping.sys", BLOCKED),
    _P("pivot", "enum_sys", "import enum\nenum.sys", BLOCKED),
    _P("pivot", "enum_type", "import enum\nenum.EnumType", BLOCKED),
    _P("pivot", "dataclasses_inspect", "import dataclasses\ndataclasses.inspect.stack()", BLOCKED),
    _P("pivot", "dataclasses_make", "import dataclasses\ndataclasses.make_dataclass('X', ['a'])", BLOCKED),
    _P("pivot", "io_open", "import io\nio.open('{secret_file}').read()", BLOCKED),
    _P("pivot", "io_fileio", "import io\nio.FileIO('{secret_file}')", BLOCKED),
    _P("pivot", "shared_set_mutation", "import hashlib\nhashlib.algorithms_available.clear()", BLOCKED),
    _P("pivot", "shared_class_dict", "import textwrap\ntextwrap.TextWrapper.unicode_whitespace_trans[32] = 'x'", BLOCKED),
    _P("pivot", "shared_class_dict_method", "import textwrap\ntextwrap.TextWrapper.unicode_whitespace_trans.clear()", BLOCKED),
    _P("pivot", "re_groupindex_ok", "import re\nprint(dict(re.compile('(?P<a>x)').groupindex))", OK, match="{'a': 1}"),
    _P("pivot", "dataclass_library_class", "import dataclasses, json\ndataclasses.dataclass(json.JSONDecoder)", REFUSED),
    _P("pivot", "dataclass_args_library_class", "import dataclasses, json\ndataclasses.dataclass(frozen=True)(json.JSONEncoder)", REFUSED),
    _P("pivot", "total_ordering_library_class", "import functools, json\nfunctools.total_ordering(json.JSONDecodeError)", REFUSED),
    _P("pivot", "wraps_library_function", "import functools, json\nfunctools.wraps(print)(json.dumps)", REFUSED),
    _P("pivot", "typing_final_library", "import typing, json\ntyping.final(json.dumps)", REFUSED),
    _P("pivot", "decorators_own_ok", "import functools, typing, dataclasses\n@functools.total_ordering\n@dataclasses.dataclass(frozen=True)\nclass V:\n    n: int\n    def __lt__(self, o):\n        return self.n < o.n\ndef deco(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return f(*a)\n    return inner\n@deco\n@typing.final\ndef g(x):\n    return x\nprint(V(1) <= V(2), g.__name__, g(3))", OK, match="True g 3"),
    _P("pivot", "library_function_attr", "import json\njson.dumps.cache = {}", REFUSED),
    _P("pivot", "time_builtin_self", "import time\ntime.sleep.__self__", REFUSED),
    _P("pivot", "time_sys", "import time\ntime.sys", BLOCKED),
    _P("pivot", "copy_copyreg", "import copy\ncopy.copyreg.dispatch_table", BLOCKED),
    _P("pivot", "copy_facade", "import copy, json\ncopy.copy(json)", BLOCKED),
    # deepcopy's memo keeps every original the walk visits (memo[id(memo)]) and every copy it makes: a cell's
    # dict there collects the internals of whatever object it copies
    _P("pivot", "deepcopy_memo_positional", "import copy\nm = {}\ncopy.deepcopy([[1], {'a': 2}], m)\nprint(len(m))", REFUSED),
    _P("pivot", "deepcopy_memo_keyword", "import copy\nm = {}\ncopy.deepcopy(ValueError('x'), memo=m)\nprint(m[id(m)])", REFUSED),
    _P("pivot", "deepcopy_memo_none_ok", "import copy\nprint(copy.deepcopy({'a': [1]}, None), copy.deepcopy([2], memo=None))", OK, match="{'a': [1]} [2]"),
    _P("pivot", "facade_write", "import json\njson.dumps = print", REFUSED),
    _P("pivot", "facade_delete", "import math\ndel math.pi", REFUSED),
    _P("pivot", "facade_type_new", "import re\ntype(re)('os', {})", REFUSED),
    # -- operator / functools gadgets ----------------------------------------------------------------------
    _P("gadget", "attrgetter_class", "import operator\noperator.attrgetter('__class__')(1)", REFUSED),
    _P("gadget", "attrgetter_dotted", "import operator\noperator.attrgetter('real.__class__')(1)", REFUSED),
    _P("gadget", "methodcaller_reduce", "import operator\noperator.methodcaller('__reduce_ex__', 2)(1)", REFUSED),
    _P("gadget", "partial_getattr", "import functools\nfunctools.partial(getattr, 1)('__class__')", REFUSED),
    _P("gadget", "reduce_getattr", "import functools\nfunctools.reduce(getattr, ['__class__', '__base__'], 1)",
       REFUSED),
    _P("gadget", "partial_func", "import functools\nfunctools.partial(print, 1).func", REFUSED),
    _P("gadget", "partial_args", "import functools\nfunctools.partial(print, 1).args", REFUSED),
    _P("gadget", "wraps_assigned",
       "import functools\nfunctools.wraps(len, assigned=('__self__',))(lambda: 0)", BLOCKED),
    _P("gadget", "sorted_key_attrgetter", "import operator\nsorted([1, 2], key=operator.attrgetter('__class__'))",
       REFUSED),
    _P("gadget", "operator_setitem_facade", "import operator, json\noperator.setitem(json, 'x', 1)", REFUSED),
    _P("gadget", "lru_wrapped", "import functools\nfunctools.lru_cache()(len).__wrapped__", REFUSED),
    _P("gadget", "exception_obj", "try:\n    (1).nope\nexcept AttributeError as e:\n    e.obj", REFUSED),
    # -- type() factories ---------------------------------------------------------------------------------
    _P("type", "type3", "type('X', (), {'__getattr__': lambda s, n: 1})", REFUSED),
    _P("type", "type_of_type", "type(type(1))('X', (), {})", REFUSED),
    _P("type", "metaclass_subclass", "class M(type): pass\nM('X', (), {})", REFUSED),
    _P("type", "metaclass_kw", "class A(metaclass=type): pass", REFUSED),
    _P("type", "namedtuple_dunder", "import collections\ncollections.namedtuple('X', ['__class__'])", BLOCKED),
    _P("type", "enum_functional_dunder",
       "import enum\nE = enum.Enum('E', {'__getattr__': 1})\nprint(E)", BLOCKED),
    _P("type", "type_one_arg_ok", "print(type(3).__name__, type(int).__name__, isinstance(int, type))", OK,
       match="int type True"),
    # -- frames and tracebacks -------------------------------------------------------------------------
    _P("frames", "traceback_attr", "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__", REFUSED),
    _P("frames", "tb_frame_via_exit",
       "class C:\n    def __enter__(self): return self\n    def __exit__(self, t, v, tb):\n        self.tb = tb\n"
       "        return True\nc = C()\nwith c:\n    1/0\nc.tb.tb_frame", REFUSED),
    _P("frames", "tb_frame_getattr",
       "class C:\n    def __enter__(self): return self\n    def __exit__(self, t, v, tb):\n        self.tb = tb\n"
       "        return True\nc = C()\nwith c:\n    1/0\ngetattr(c.tb, 'tb_frame')", REFUSED),
    _P("frames", "tb_next", "try:\n    1/0\nexcept Exception as e:\n    t = e.with_traceback(None)\nt.tb_next",
       REFUSED),
    _P("frames", "f_back", "def f(): pass\ngetattr(f, 'f_back')", REFUSED),
    _P("frames", "sys_getframe", "import sys\nsys._getframe()", REFUSED),
    _P("frames", "inspect_module", "import inspect\ninspect.currentframe()", REFUSED),
    _P("frames", "traceback_module", "import traceback\ntraceback.extract_stack()", REFUSED),
    # -- generator / coroutine internals ---------------------------------------------------------------
    _P("generator", "gi_frame", "g = (x for x in [1])\ng.gi_frame.f_globals", REFUSED),
    _P("generator", "gi_code", "def g():\n    yield 1\ng().gi_code", REFUSED),
    _P("generator", "gi_yieldfrom", "def g():\n    yield from [1]\ng().gi_yieldfrom", REFUSED),
    _P("generator", "gi_frame_computed", "def g():\n    yield 1\ngetattr(g(), 'gi_' + 'frame')", REFUSED),
    _P("generator", "cr_frame", "async def c(): pass\nc().cr_frame", REFUSED),
    _P("generator", "ag_frame", "async def a():\n    yield 1\na().ag_frame", REFUSED),
    _P("generator", "generator_ok", "def g():\n    yield 1\n    yield 2\nprint(sum(g()))", OK, match="3"),
    # -- imports ---------------------------------------------------------------------------------------
    _P("imports", "os", "import os", REFUSED, match="available modules"),
    _P("imports", "sys", "import sys", REFUSED),
    _P("imports", "subprocess", "import subprocess", REFUSED),
    _P("imports", "importlib", "import importlib\nimportlib.import_module('os')", REFUSED),
    _P("imports", "builtins", "import builtins\nbuiltins.open", REFUSED),
    _P("imports", "relative", "from . import x", REFUSED),
    _P("imports", "relative_parent", "from .. import os", REFUSED),
    _P("imports", "star", "from json import *", REFUSED),
    _P("imports", "submodule", "import json.decoder", REFUSED),
    _P("imports", "from_submodule", "from json import decoder", BLOCKED),
    _P("imports", "alias_guard", "import re as _getattr_", REFUSED),
    _P("imports", "dunder_import_builtin", "__builtins__['__import__']('os')", REFUSED),
    _P("imports", "pathlib", "import pathlib\npathlib.Path('{secret_file}').read_text()", REFUSED),
    _P("imports", "ctypes", "import ctypes", REFUSED),
    _P("imports", "pickle", "import pickle", REFUSED),
    _P("imports", "threading", "import threading", REFUSED),
    # -- asyncio -----------------------------------------------------------------------------------------
    _P("asyncio", "import_asyncio", "import asyncio", REFUSED),
    _P("asyncio", "async_def", "async def f():\n    return 1", REFUSED, match="async"),
    _P("asyncio", "await_top", "await something()", REFUSED),
    _P("asyncio", "async_for", "async def f():\n    async for x in y:\n        pass", REFUSED),
    _P("asyncio", "async_with", "async def f():\n    async with y:\n        pass", REFUSED),
    _P("asyncio", "concurrent_futures", "import concurrent.futures", REFUSED),
    _P("asyncio", "async_comprehension", "async def f():\n    return [x async for x in y]", REFUSED),
    # -- guard-shadowing parameters -------------------------------------------------------------------
    _P("shadow", "default_param", "def f(_getattr_=getattr):\n    return _getattr_", REFUSED),
    _P("shadow", "posonly_param", "def f(_write_=None, /):\n    return 1", REFUSED),
    _P("shadow", "kwonly_param", "def f(*, _getiter_=None):\n    return 1", REFUSED),
    _P("shadow", "varargs", "def f(*_apply_):\n    return 1", REFUSED),
    _P("shadow", "kwargs", "def f(**_getitem_):\n    return 1", REFUSED),
    _P("shadow", "lambda_param", "(lambda _getattr_: 1)(2)", REFUSED),
    _P("shadow", "assign_guard", "_getattr_ = lambda o, n: 1", REFUSED),
    _P("shadow", "walrus", "(_write_ := 1)", REFUSED),
    _P("shadow", "for_target", "for _getitem_ in [1]: pass", REFUSED),
    _P("shadow", "with_target", "class C:\n    def __enter__(self): return 1\n    def __exit__(self, *a): pass\n"
       "with C() as _print:\n    pass", REFUSED),
    _P("shadow", "except_name", "try:\n    1/0\nexcept Exception as _getattr_:\n    pass", REFUSED),
    _P("shadow", "comprehension", "[1 for _getiter_ in [1]]", REFUSED),
    _P("shadow", "class_attr", "class A:\n    _getattr_ = print", REFUSED),
    _P("shadow", "global_decl", "def f():\n    global _print\n    _print = 1", REFUSED),
    _P("shadow", "nested_def", "def f():\n    def _getattr_(o, n):\n        return 1", REFUSED),
    _P("shadow", "assign_module_name", "__name__ = 'x'", REFUSED),
    _P("shadow", "del_guard", "del _write_", REFUSED),
    _P("shadow", "class_named_guard", "class _getitem_: pass", REFUSED),
    _P("shadow", "match_statement", "match 1:\n    case int(real=r):\n        pass", REFUSED),
    # -- except* and exception groups (allowed: each handler starts with a time-out check; a time-out never
    #    leaves the statement wrapped in a group) -------------------------------------------------------
    _P("except_star", "handler_not_a_class", "try:\n    raise ValueError\nexcept* 1:\n    pass", BLOCKED),
    _P("except_star", "handler_group_type",
       "try:\n    raise ValueError\nexcept* ExceptionGroup:\n    pass", BLOCKED),
    _P("except_star", "handler_underscore_name", "try:\n    raise ValueError\nexcept* ValueError as _g:\n    pass", REFUSED),
    _P("except_star", "group_traceback",
       "try:\n    raise ExceptionGroup('g', [ValueError()])\nexcept* ValueError as eg:\n    eg.__traceback__", REFUSED),
    _P("except_star", "member_traceback",
       "try:\n    raise ExceptionGroup('g', [ValueError()])\nexcept* ValueError as eg:\n    getattr(eg.exceptions[0], '__trace' + 'back__')", REFUSED),
    _P("except_star", "group_context",
       "try:\n    1/0\nexcept* ZeroDivisionError as eg:\n    getattr(eg, '__con' + 'text__')", REFUSED),
    _P("except_star", "swallow_timeout",
       "while True:\n    try:\n        while True:\n            pass\n    except* BaseException:\n        pass", LIMIT),
    _P("except_star", "timeout_in_handler_with_rest",
       "try:\n    raise ExceptionGroup('g', [ValueError(), KeyError()])\nexcept* ValueError:\n    while True:\n        pass", LIMIT),
    _P("except_star", "timeout_swallowed_by_finally",
       "try:\n    try:\n        while True:\n            pass\n    except* BaseException:\n        pass\nfinally:\n    while True:\n        pass", LIMIT),
    _P("except_star", "group_of_timeouts",
       "g = []\nwhile True:\n    try:\n        while True:\n            pass\n    except* BaseException as e:\n        g.append(e)", LIMIT),
    # exception-group subclasses: except* would call their own split (handing a handler a non-exception and
    # raising an object no except catches); the kernel reads .exceptions while showing a traceback
    _P("except_star", "split_override",
       "class G(ExceptionGroup):\n    def split(self, t):\n        return (object(), object())\n"
       "try:\n    raise G('g', [ValueError(1)])\nexcept* ValueError as g:\n    print(type(g))", REFUSED),
    _P("except_star", "exceptions_property_in_traceback",
       "class G(ExceptionGroup):\n    @property\n    def exceptions(self):\n        while True:\n            pass\n"
       "raise G('g', [ValueError()])", REFUSED),
    _P("except_star", "base_group_subclass", "class G(Exception, BaseExceptionGroup):\n    pass", REFUSED),
    _P("except_star", "group_subclass_of_subclass",
       "class E(ExceptionGroup):\n    pass", REFUSED),
    # refused before the class exists: an Enum mixin runs its members' __init__ while the class is being
    # created, so a check after creation let an instance (and its split override) escape into a global
    _P("except_star", "group_subclass_smuggled_out_of_an_enum",
       "import enum\ntry:\n    class E(ExceptionGroup, enum.Enum):\n        A = ('m', [ValueError(1)])\n"
       "        def __init__(self, *a):\n            global smuggled\n            smuggled = self\n"
       "        def split(self, t):\n            return (print, None)\nexcept Exception:\n    pass\n"
       "try:\n    smuggled\n    print('captured')\nexcept NameError:\n    print('not captured')",
       OK, match="not captured"),
    _P("except_star", "group_subclass_as_second_enum_base",
       "import enum\nclass E(enum.Enum, ExceptionGroup):\n    A = ('m', [ValueError(1)])", REFUSED),
    _P("except_star", "builtin_group_split_write", "g = ExceptionGroup('g', [ValueError()])\ng.split = len", REFUSED),
    _P("except_star", "builtin_group_setattr", "g = ExceptionGroup('g', [ValueError()])\nsetattr(g, 'exceptions', 1)", REFUSED),
    _P("except_star", "deeply_nested_groups",
       "g = ValueError()\nfor n in range(150):\n    g = ExceptionGroup('x', [g])\ntry:\n    raise g\nexcept* ValueError as e:\n"
       "    print('caught', type(e).__name__)", OK, match="caught ExceptionGroup"),
    _P("except_star", "notes_write", "e = ValueError()\ne.__notes__ = [1]", REFUSED),
    _P("except_star", "notes_setattr", "e = ValueError()\nsetattr(e, '__notes__', [object()])", REFUSED),
    _P("except_star", "notes_not_exception", "class A:\n    pass\nA().__notes__", REFUSED),
    _P("except_star", "notes_library_object", "import json\njson.__notes__", REFUSED),
    _P("except_star", "add_note_not_str", "e = ValueError()\ne.add_note(1)", BLOCKED),
    # -- name mangling, __slots__, __all__, Enum hooks: private names of your own classes only ----------
    _P("mangle", "other_object", "class C:\n    def f(self, o):\n        return o.__x\nC().f(1)", REFUSED),
    _P("mangle", "library_object", "class C:\n    def f(self):\n        return [].__x\nC().f()", REFUSED),
    _P("mangle", "class_named_like_library",
       "import fractions\nclass Fraction:\n    def f(self):\n        return fractions.Fraction(1).__numerator\nFraction().f()", REFUSED),
    _P("mangle", "facade", "import json\nclass C:\n    def f(self):\n        return json.__x\nC().f()", REFUSED),
    _P("mangle", "outside_class", "class C:\n    pass\nC().__x", REFUSED),
    _P("mangle", "underscore_class", "class __:\n    def f(self):\n        return self.__x", REFUSED),
    _P("mangle", "dunder_not_mangled", "class C:\n    def f(self):\n        return self.__class__", REFUSED),
    _P("mangle", "mangled_name_load", "class C:\n    __k = 1\n    j = __k", REFUSED),
    _P("mangle", "mangled_global", "class C:\n    def f(self):\n        global __g\n        __g = 1", REFUSED),
    _P("mangle", "slots_read", "class C:\n    __slots__ = ('a',)\nC.__slots__", REFUSED),
    _P("mangle", "slots_outside_class", "__slots__ = ('a',)", REFUSED),
    _P("mangle", "slots_in_method", "class C:\n    def f(self):\n        __slots__ = 1", REFUSED),
    _P("mangle", "other_dunder_in_class", "class C:\n    __dict__ = {}", REFUSED),
    _P("mangle", "all_in_class", "class C:\n    __all__ = []", REFUSED),
    _P("mangle", "all_in_function", "def f():\n    return __all__", REFUSED),
    _P("mangle", "builtins_assign", "__builtins__ = {}", REFUSED),
    _P("mangle", "enum_hook_outside_class", "def _missing_(cls, v):\n    return 1", REFUSED),
    _P("mangle", "enum_hook_read",
       "import enum\nclass E(enum.Enum):\n    A = 1\n    @classmethod\n    def _missing_(cls, v):\n        return cls.A\nE._missing_", REFUSED),
    _P("mangle", "enum_hook_computed", "import enum\ngetattr(enum.Enum, '_missing_')", REFUSED),
    _P("mangle", "other_sunder_hook", "class C:\n    def _ignore_(self):\n        pass", REFUSED),
    # -- decimal local contexts: only the cell's own (capped) copy can be changed -------------------------
    _P("decimal", "localcontext_prec_bomb",
       "import decimal\nwith decimal.localcontext() as c:\n    c.prec = 10**9", LIMIT),
    _P("decimal", "localcontext_kwarg_bomb", "import decimal\nwith decimal.localcontext(prec=10**9):\n    pass", LIMIT),
    _P("decimal", "index_toctou",
       "import decimal\nclass I:\n    n = 0\n    def __index__(self):\n        I.n += 1\n        return 5 if I.n == 1 else 10**9\n"
       "with decimal.localcontext() as c:\n    c.prec = I()\nprint(c.prec)", OK, match="5"),
    _P("decimal", "saved_context", "import decimal\ncm = decimal.localcontext()\ncm._rlm_saved", REFUSED),
    _P("decimal", "saved_context_computed",
       "import decimal\ncm = decimal.localcontext()\nwith cm:\n    getattr(cm, '_rlm_' + 'saved')", REFUSED),
    _P("decimal", "signal_dict_write",
       "import decimal\nwith decimal.localcontext() as c:\n    c.traps[decimal.Inexact] = True", REFUSED),
    _P("decimal", "decimal_attribute", "import decimal\ndecimal.Decimal(1).x = 2", REFUSED),
    _P("decimal", "not_a_context", "import decimal\ndecimal.localcontext(1)", BLOCKED),
    # -- errors keep Python's types; refusals of what Python allows stay SandboxError -------------------
    _P("errors", "facade_write_not_attributeerror",
       "import json\ntry:\n    json.dumps = 1\nexcept (AttributeError, TypeError):\n    print('caught')", REFUSED),
    _P("errors", "library_write_not_typeerror",
       "import collections\nm = collections.abc.Mapping\ntry:\n    m.x = 1\nexcept (AttributeError, TypeError):\n    print('caught')", REFUSED),
    # -- resource bombs ---------------------------------------------------------------------------------
    # -- caps at the operation, not on a stand-in (issue 26, class 4) ---------------------------------------
    _P("op_cap", "int_of_huge_decimal", "import decimal\nint(decimal.Decimal('1e20000000'))", LIMIT),
    _P("op_cap", "int_of_many_digit_decimal", "import decimal\nint(decimal.Decimal('9' * 10**6))", LIMIT),
    _P("op_cap", "int_hex_text", "x = int('f' * 10**6, 16)", LIMIT),
    _P("op_cap", "int_hex_then_decimal", "import decimal\ndecimal.Decimal(int('f' * 10**6, 16))", LIMIT),
    _P("op_cap", "int_binary_bytes", "x = int(b'1' * (3 * 10**6), 2)", LIMIT),
    _P("op_cap", "int_base0_prefix", "x = int('0x' + 'f' * 10**6, 0)", LIMIT),
    _P("op_cap", "int_via_map", "list(map(int, ['f' * 10**6], [16]))", LIMIT),
    _P("op_cap", "int_via_partial", "import functools\nfunctools.partial(int, base=16)('f' * 10**6)", LIMIT),
    _P("op_cap", "int_via_type", "type(5)('f' * 10**6, 16)", LIMIT),
    _P("op_cap", "int_via_mro", "bool.mro()[1]('f' * 10**6, 16)", LIMIT),
    _P("op_cap", "int_subclass_new", "class I(int):\n    pass\nI('f' * 10**6, 16)", LIMIT),
    _P("op_cap", "round_huge_decimal", "import decimal\nround(decimal.Decimal('1e20000000'))", LIMIT),
    _P("op_cap", "floor_huge_decimal", "import decimal, math\nmath.floor(decimal.Decimal('1e20000000'))", LIMIT),
    _P("op_cap", "ceil_huge_decimal", "import decimal, math\nmath.ceil(decimal.Decimal('1e20000000'))", LIMIT),
    _P("op_cap", "trunc_huge_decimal", "import decimal, math\nmath.trunc(decimal.Decimal('1e20000000'))", LIMIT),
    _P("op_cap", "decimal_ratio", "import decimal\ndecimal.Decimal('1e20000000').as_integer_ratio()", LIMIT),
    _P("op_cap", "fraction_of_decimal", "import decimal, fractions\nfractions.Fraction(decimal.Decimal('1e20000000'))", LIMIT),
    _P("op_cap", "fraction_from_decimal", "import decimal, fractions\nfractions.Fraction.from_decimal(decimal.Decimal('1e20000000'))", LIMIT),
    _P("op_cap", "percent_d_decimal", "import decimal\nx = '%d' % decimal.Decimal('1e20000000')", LIMIT),
    _P("op_cap", "decimal_fixed_format", "import decimal\nx = f'{decimal.Decimal(\"1e999999999\"):f}'", LIMIT),
    _P("op_cap", "ljust", "x = 'x'.ljust(2 * 10**9)", LIMIT),
    _P("op_cap", "rjust_unbound", "x = str.rjust('x', 2 * 10**9)", LIMIT),
    _P("op_cap", "center_bytes", "x = b'x'.center(2 * 10**9)", LIMIT),
    _P("op_cap", "zfill_bytearray", "x = bytearray(b'1').zfill(2 * 10**9)", LIMIT),
    _P("op_cap", "userstring_ljust", "import collections\nx = collections.UserString('x').ljust(2 * 10**9)", LIMIT),
    _P("op_cap", "ljust_via_methodcaller", "import operator\nx = operator.methodcaller('ljust', 2 * 10**9)('x')", LIMIT),
    _P("op_cap", "ljust_via_map", "x = list(map(str.ljust, ['x'], [2 * 10**9]))", LIMIT),
    _P("op_cap", "ljust_index_object", "class W:\n    def __index__(self):\n        return 2 * 10**9\nx = 'x'.ljust(W())", LIMIT),
    _P("op_cap", "expandtabs", "x = ('\\t' * 10**6).expandtabs(10**4)", LIMIT),
    _P("op_cap", "replace_grows", "x = ('x' * 10**6).replace('x', 'y' * 1000)", LIMIT),
    _P("op_cap", "replace_empty", "x = ('x' * 10**6).replace('', 'y' * 1000)", LIMIT),
    _P("op_cap", "translate_grows", "x = ('x' * 10**6).translate({120: 'y' * 1000})", LIMIT),
    _P("op_cap", "join_grows", "x = ''.join(['x' * 10**7] * 30)", LIMIT),
    _P("op_cap", "join_separator", "x = ('y' * 10**6).join(['a'] * 1000)", LIMIT),
    _P("op_cap", "counter_long_string", "import collections\nwhile True:\n    collections.Counter('x' * (2 * 10**8))", LIMIT),
    _P("op_cap", "sorted_many_floats", "import random\nx = [random.random() for i in range(10**6)] * 30\nwhile True:\n    sorted(x)", LIMIT),
    _P("op_cap", "list_sort_many", "x = list(range(10**6)) * 40\nwhile True:\n    x.sort()", LIMIT),
    _P("op_cap", "int_via_json_parse_int", "import json\njson.JSONDecoder().parse_int('f' * 10**6, 16)", LIMIT),
    _P("op_cap", "list_subclass_sort", "class L(list):\n    pass\nx = L(range(10**6)) * 40\nwhile True:\n    x.sort()", LIMIT),
    _P("op_cap", "statistics_median_sort", "import random, statistics\nx = [random.random() for i in range(10**6)] * 30\nwhile True:\n    statistics.median(x)", LIMIT),
    _P("op_cap", "json_indent", "import json\njson.dumps([[1]] * 10, indent=10**9)", LIMIT),
    _P("op_cap", "pformat_indent", "import pprint\npprint.pformat([[1]] * 10, indent=10**9)", LIMIT),
    # -- one C call whose cost a count of items does not see (issue 26 red team: bulk.py, ordering.py) -----
    *STEP_ATTACKS,
    *HASH_ATTACKS,
    *LIBRARY_COMPARE_ATTACKS,
    *LIBRARY_COMPARE_CONTROLS,
    *JSON_ATTACKS,
    *STEP_CONTROLS,
    _P("control", "stats_json_ok", "import json, statistics\nprint(statistics.median([3, 1, 2]), json.dumps([1], indent=1).count(chr(10)), json.loads('[7]', parse_int=int))", OK, match="2 2 [7]"),
    _P("control", "int_ok", "print(int('12'), int('ff', 16), int(3.9), int(b'101', 2), int('0x1f', 0), int())", OK, match="12 255 3 5 31 0"),
    _P("control", "int_type_identity", "print(type(5) is int, isinstance(True, int), issubclass(bool, int), isinstance(5, (int, float)), int | None)", OK, match="True True True True int | None"),
    _P("control", "int_subclass_ok", "class I(int):\n    pass\nprint(I(7) + 1, isinstance(I(7), int), type(I(7)).__name__)", OK, match="8 True I"),
    _P("control", "int_enum_mixin", "import enum\nclass E(int, enum.Enum):\n    A = 1\nprint(E.A + 1, isinstance(E.A, int))", OK, match="2 True"),
    _P("control", "int_singledispatch", "import functools\n@functools.singledispatch\ndef f(x):\n    return 'other'\n@f.register(int)\ndef f_int(x):\n    return 'int'\nprint(f(3), f('a'))", OK, match="int other"),
    _P("control", "decimal_int_ok", "import decimal, math, fractions\nd = decimal.Decimal('12.75')\nprint(int(d), round(d), math.floor(d), fractions.Fraction(d), '%d' % d, f'{d:.1f}')", OK, match="12 13 12 51/4 12 12.8"),
    _P("control", "padding_ok", "print('x'.ljust(3) + '|', 'a\\tb'.expandtabs(2), 'ab'.replace('a', 'zz'), '-'.join('abc'), str.center('x', 3), b'1'.zfill(3))", OK, match="x  | a b zzb a-b-c  x  b'001'"),
    _P("control", "sort_ok", "x = [3, 1, 2]\nx.sort()\nprint(x, sorted('cab', reverse=True), sorted([(1, 'b'), (0, 'a')]))", OK, match="[1, 2, 3] ['c', 'b', 'a'] [(0, 'a'), (1, 'b')]"),
    _P("control", "counter_ok", "import collections\nc = collections.Counter('abracadabra')\nc.update('aa')\nprint(c.most_common(1))", OK, match="[('a', 7)]"),
    _P("bomb", "python_loop", "while True:\n    pass", LIMIT),
    _P("bomb", "swallow_bare_except",
       "while True:\n    try:\n        while True:\n            pass\n    except:\n        pass", LIMIT),
    _P("bomb", "swallow_baseexception",
       "n = 0\nwhile True:\n    try:\n        while True:\n            n = n + 1\n    except BaseException:\n"
       "        pass", LIMIT),
    _P("bomb", "swallow_finally_return",
       "def f():\n    try:\n        while True:\n            pass\n    finally:\n        return 1\nwhile True:\n"
       "    f()", LIMIT),
    _P("bomb", "swallow_exit_true",
       "class S:\n    def __enter__(self): return self\n    def __exit__(self, *a): return True\nwhile True:\n"
       "    with S():\n        while True:\n            pass", LIMIT),
    _P("bomb", "c_loop_sum_range", "sum(range(10**12))", LIMIT),
    _P("bomb", "c_loop_max_range", "max(range(10**10))", LIMIT),
    _P("bomb", "c_loop_repeat", "import itertools\nany(itertools.repeat(0))", LIMIT),
    _P("bomb", "c_loop_count", "import itertools, collections\ncollections.deque(itertools.count(), maxlen=0)",
       LIMIT),
    _P("bomb", "c_loop_cycle", "import itertools\nsum(itertools.cycle([1]))", LIMIT),
    _P("bomb", "c_loop_iter_callable", "any(iter(int, 1))", LIMIT),
    _P("bomb", "c_loop_product", "import itertools\nany(x is None for x in itertools.product(range(50), repeat=9))",
       LIMIT),
    _P("bomb", "c_loop_reduce", "import functools, operator\nfunctools.reduce(operator.mul, range(1, 3 * 10**6))",
       LIMIT),
    _P("bomb", "memory_str_repeat", "x = 'a' * 10**10", LIMIT),
    _P("bomb", "memory_list_repeat", "x = [0] * 10**10", LIMIT),
    _P("bomb", "memory_bytearray", "x = bytearray(10**11)", LIMIT),
    _P("bomb", "memory_bytes", "x = bytes(10**11)", LIMIT),
    _P("bomb", "memory_inplace_repeat", "x = [1]\nx *= 10**10", LIMIT),
    _P("bomb", "memory_growth", "x = []\nwhile True:\n    x.append('a' * 10**7)", LIMIT, isolated=True),
    _P("bomb", "memory_center", "x = 'a'.center(10**11)", LIMIT, isolated=True),
    _P("bomb", "bignum_pow", "10**(10**8)", LIMIT),
    _P("bomb", "bignum_pow_builtin", "pow(7, 10**9)", LIMIT),
    _P("bomb", "bignum_shift", "1 << 10**10", LIMIT),
    _P("bomb", "bignum_inplace_pow", "x = 10\nx **= 10**9", LIMIT),
    _P("bomb", "bignum_factorial", "import math\nmath.factorial(10**8)", LIMIT),
    _P("bomb", "bignum_operator_pow", "import operator\noperator.pow(10, 10**9)", LIMIT),
    _P("bomb", "redos", "import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')", LIMIT),
    _P("bomb", "format_width_fstring", "f'{1:999999999999}'", LIMIT),
    _P("bomb", "format_width_method", "'{:>2000000000}'.format('x')", LIMIT),
    _P("bomb", "format_width_builtin", "format(1, '2000000000')", LIMIT),
    _P("bomb", "format_width_percent", "'%2000000000d' % 1", LIMIT),
    _P("bomb", "format_width_star", "'%*d' % (2000000000, 1)", LIMIT),
    _P("bomb", "format_precision", "f'{1.5:.900000000f}'", LIMIT),
    _P("bomb", "output_flood_loop", "for i in range(30000):\n    print('x' * 100)", TRUNCATED),
    _P("bomb", "output_flood_single", "print('y' * 5_000_000)", TRUNCATED),
    _P("bomb", "compile_bomb_size", "x = [" + "1," * 400_000 + "]", BLOCKED),
    _P("bomb", "compile_bomb_nesting", "x = " + "(" * 5000 + "1" + ")" * 5000, BLOCKED),
    _P("bomb", "compile_bomb_unary", "x = " + "-" * 100_000 + "1", BLOCKED),
    _P("bomb", "index_repeat", "class N:\n    def __index__(self):\n        return 10**11\nx = 'a' * N()", LIMIT),
    _P("bomb", "index_bytes", "class N:\n    def __index__(self):\n        return 10**11\nx = bytes(N())", LIMIT),
    _P("bomb", "int_subclass_pow", "class I(int):\n    pass\nI(10) ** I(10**9)", LIMIT),
    _P("bomb", "int_subclass_factorial", "import math\nclass I(int):\n    def __gt__(self, o):\n        return False\nmath.factorial(I(10**8))", LIMIT),
    _P("bomb", "random_bits", "import random\nrandom.getrandbits(10**11)", LIMIT),
    _P("bomb", "decimal_precision", "import decimal\ndecimal.Context(prec=10**9)", LIMIT),
    # -- secrets -------------------------------------------------------------------------------------
    _P("secrets", "open_secret", "open('{secret_file}').read()", REFUSED),
    _P("secrets", "os_environ", "import os\nos.environ['OPENAI_API_KEY']", REFUSED),
    _P("secrets", "exec_open", "exec(\"print(open('{secret_file}').read())\")", REFUSED),
    _P("secrets", "eval_open", "eval(\"open('{secret_file}').read()\")", REFUSED),
    _P("secrets", "compile_builtin", "compile('1', 'x', 'eval')", REFUSED),
    _P("secrets", "globals", "globals()", REFUSED),
    _P("secrets", "locals", "locals()", REFUSED),
    _P("secrets", "input", "input()", REFUSED),
    _P("secrets", "breakpoint", "breakpoint()", REFUSED),
    _P("secrets", "help", "help(len)", REFUSED),
    # -- IPython escapes (need a real kernel) -----------------------------------------------------------
    _P("ipython", "get_ipython", "get_ipython().system('cat {secret_file}')", REFUSED, kernel_only=True),
    _P("ipython", "get_ipython_bare", "ip = get_ipython", REFUSED, kernel_only=True),
    _P("ipython", "bang_cmd", "!cat {secret_file}", REFUSED, kernel_only=True, match="shell commands"),
    _P("ipython", "bang_assign", "x = !env", REFUSED, kernel_only=True),
    _P("ipython", "magic_run", "%run {secret_file}", REFUSED, kernel_only=True),
    _P("ipython", "magic_load", "%load {secret_file}", REFUSED, kernel_only=True),
    _P("ipython", "magic_env", "%env", REFUSED, kernel_only=True),
    _P("ipython", "magic_pip", "%pip list", REFUSED, kernel_only=True),
    _P("ipython", "magic_sx", "%sx cat {secret_file}", REFUSED, kernel_only=True),
    _P("ipython", "cell_bash", "%%bash\ncat {secret_file}", REFUSED, kernel_only=True),
    _P("ipython", "cell_writefile", "%%writefile /tmp/rlm-pwn.py\nprint(1)", REFUSED, kernel_only=True),
    _P("ipython", "magic_config", "%config IPCompleter.evaluation = 'unsafe'", REFUSED, kernel_only=True),
    _P("ipython", "magic_store", "%store -r", REFUSED, kernel_only=True),
    _P("ipython", "magic_debug", "%debug", REFUSED, kernel_only=True),
    _P("ipython", "magic_time_body", "%time open('{secret_file}').read()", REFUSED, kernel_only=True),
    _P("ipython", "magic_timeit_body", "%timeit -n1 -r1 ().__class__", REFUSED, kernel_only=True),
    _P("ipython", "exit", "exit()", REFUSED, kernel_only=True),
    _P("ipython", "quit", "quit()", REFUSED, kernel_only=True),
    _P("ipython", "user_expressions", "open('{secret_file}').read()", REFUSED, kernel_only=True,
       mode="user_expressions"),
    _P("ipython", "user_expressions_dunder", "().__class__.__subclasses__()", REFUSED, kernel_only=True,
       mode="user_expressions"),
    _P("ipython", "debug_request", "", REFUSED, kernel_only=True, mode="debug_request"),
    # -- positive controls ---------------------------------------------------------------------------
    _P("control", "regex", "import re\nprint(re.findall(r'\\d+', 'a1b22c333'))", OK, match="['1', '22', '333']"),
    _P("control", "regex_groups",
       "import re\nm = re.search(r'(?P<k>\\w+)=(?P<v>\\d+)', 'x a=12')\nprint(m.group('k'), m['v'], m.span())",
       OK, match="a 12 (2, 6)"),
    _P("control", "json", "import json\nd = json.loads('{\"a\": [1, 2]}')\nd['b'] = True\nprint(json.dumps(d, "
       "sort_keys=True))", OK, match='{"a": [1, 2], "b": true}'),
    _P("control", "counter",
       "from collections import Counter\nc = Counter('the cat the hat the end'.split())\nprint(c.most_common(1))",
       OK, match="[('the', 3)]"),
    _P("control", "counting_augassign",
       "counts = {}\nfor w in 'a b a c a'.split():\n    counts[w] = counts.get(w, 0)\n    counts[w] += 1\n"
       "print(counts)", OK, match="{'a': 3, 'b': 1, 'c': 1}"),
    _P("control", "defaultdict",
       "from collections import defaultdict\nd = defaultdict(list)\nfor k, v in [('a', 1), ('b', 2), ('a', 3)]:\n"
       "    d[k].append(v)\nprint(dict(d))", OK, match="{'a': [1, 3], 'b': [2]}"),
    _P("control", "comprehensions",
       "xs = [i * i for i in range(5) if i % 2 == 0]\nd = {k: v for k, v in zip('abc', range(3))}\n"
       "s = {c for c in 'hello'}\ng = sum(x for x in range(10))\nprint(xs, d, sorted(s), g)",
       OK, match="[0, 4, 16] {'a': 0, 'b': 1, 'c': 2} ['e', 'h', 'l', 'o'] 45"),
    _P("control", "class_with_state",
       "class Stack:\n    def __init__(self):\n        self.items = []\n        self._pushes = 0\n"
       "    def push(self, x):\n        self.items.append(x)\n        self._pushes += 1\n"
       "    def __len__(self):\n        return len(self.items)\n    def __iter__(self):\n"
       "        return iter(self.items)\n    def __repr__(self):\n        return f'Stack({self.items!r})'\n"
       "    def _repr_html_(self):\n        return '<b>stack</b>'\n"
       "s = Stack()\ns.push(1)\ns.push(2)\nprint(len(s), list(s), s, s._pushes, s._repr_html_())",
       OK, match="2 [1, 2] Stack([1, 2]) 2 <b>stack</b>"),
    _P("control", "class_ordering",
       "class V:\n    def __init__(self, n):\n        self.n = n\n    def __eq__(self, o):\n        return self.n == o.n\n"
       "    def __lt__(self, o):\n        return self.n < o.n\n    def __hash__(self):\n        return hash(self.n)\n"
       "print([v.n for v in sorted([V(3), V(1), V(2)])], V(1) == V(1), len({V(1), V(1)}))",
       OK, match="[1, 2, 3] True 1"),
    _P("control", "inheritance_super",
       "class A:\n    def __init__(self, x):\n        self.x = x\nclass B(A):\n    def __init__(self, x, y):\n"
       "        super().__init__(x)\n        self.y = y\nb = B(1, 2)\nb.x += 10\nprint(b.x, b.y, isinstance(b, A))",
       OK, match="11 2 True"),
    _P("control", "sorting_keys",
       "import operator\nrows = [{'n': 'b', 'v': 2}, {'n': 'a', 'v': 2}, {'n': 'c', 'v': 1}]\n"
       "print([r['n'] for r in sorted(rows, key=lambda r: (-r['v'], r['n']))])\n"
       "print(sorted([(2, 'x'), (1, 'y')], key=operator.itemgetter(1), reverse=True))",
       OK, match="['a', 'b', 'c']\n[(1, 'y'), (2, 'x')]"),
    _P("control", "attrgetter_ok",
       "import operator\nclass P:\n    def __init__(self, n):\n        self.n = n\n"
       "print([p.n for p in sorted([P(2), P(1)], key=operator.attrgetter('n'))])", OK, match="[1, 2]"),
    _P("control", "fstrings",
       "x = 3.14159\nname = 'pi'\nprint(f'{name!r:>6}|{x:.2f}|{x:8.3f}|{42:05d}|{1234567:,}')",
       OK, match="  'pi'|3.14|   3.142|00042|1,234,567"),
    _P("control", "str_format_ok", "print('{} has {:.1f}% of {name}'.format('a', 12.345, name='b'))",
       OK, match="a has 12.3% of b"),
    _P("control", "percent_format_ok", "print('%s=%05.1f' % ('x', 3.14159))", OK, match="x=003.1"),
    _P("control", "dataclasses",
       "from dataclasses import dataclass, field, asdict\n@dataclass(order=True)\nclass Item:\n    score: float\n"
       "    name: str = field(default='', compare=False)\n    tags: list = field(default_factory=list)\n"
       "items = sorted([Item(2.0, 'b'), Item(1.0, 'a')])\nitems[0].tags.append('t')\nprint(asdict(items[0]))",
       OK, match="{'score': 1.0, 'name': 'a', 'tags': ['t']}"),
    _P("control", "namedtuple",
       "from collections import namedtuple\nP = namedtuple('P', 'x y')\np = P(1, 2)\n"
       "print(p._asdict(), p._replace(x=5), P._fields)", OK, match="{'x': 1, 'y': 2} P(x=5, y=2) ('x', 'y')"),
    _P("control", "enum", "from enum import Enum, auto\nclass C(Enum):\n    RED = auto()\n    BLUE = auto()\n"
       "print(C.RED.name, C(2), len(C))", OK, match="RED C.BLUE 2"),
    _P("control", "exceptions",
       "def f(x):\n    if x < 0:\n        raise ValueError(f'negative: {x}')\n    return x\ntry:\n    f(-1)\n"
       "except ValueError as e:\n    print('caught', e, e.args)", OK, match="caught negative: -1 ('negative: -1',)"),
    _P("control", "closures_nonlocal",
       "def counter():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n        return n\n"
       "    return inc\nc = counter()\nc()\nprint(c())", OK, match="2"),
    _P("control", "itertools_ok",
       "import itertools\nprint(list(itertools.islice(itertools.count(10), 3)), list(itertools.chain([1], [2])), "
       "[k for k, g in itertools.groupby('aabbb')], list(itertools.combinations('abc', 2))[:2])",
       OK, match="[10, 11, 12] [1, 2] ['a', 'b'] [('a', 'b'), ('a', 'c')]"),
    _P("control", "heapq_bisect",
       "import heapq, bisect\nh = [5, 1, 3]\nheapq.heapify(h)\nprint(heapq.heappop(h), heapq.nlargest(1, h), "
       "bisect.bisect([1, 3, 5], 4))", OK, match="1 [5] 2"),
    _P("control", "math_stats",
       "import math, statistics\nprint(math.sqrt(16), math.prod([2, 3]), statistics.mean([1, 2, 3, 4]), "
       "statistics.median([3, 1, 2]), math.factorial(10))", OK, match="4.0 6 2.5 2 3628800"),
    _P("control", "decimal_fraction",
       "from decimal import Decimal\nfrom fractions import Fraction\nprint(Decimal('1.1') + Decimal('2.2'), "
       "Fraction(1, 3) + Fraction(1, 6))", OK, match="3.3 1/2"),
    _P("control", "random_seeded",
       "import random\nrandom.seed(7)\na = [random.randint(1, 100) for _ in range(3)]\nrandom.seed(7)\n"
       "b = [random.randint(1, 100) for _ in range(3)]\nprint(a == b, len(random.sample(range(100), 5)))",
       OK, match="True 5"),
    _P("control", "csv_stringio",
       "import csv, io\nrows = list(csv.reader(io.StringIO('a,b\\n1,2\\n')))\nout = io.StringIO()\n"
       "csv.writer(out).writerow(['x', 'y'])\nprint(rows, repr(out.getvalue()))",
       OK, match="[['a', 'b'], ['1', '2']] 'x,y\\r\\n'"),
    _P("control", "text_tools",
       "import textwrap, difflib, string\nprint(textwrap.shorten('hello big world', 12), "
       "round(difflib.SequenceMatcher(None, 'abcd', 'abce').ratio(), 2), string.capwords('a b'))",
       OK, match="hello [...] 0.75 A B"),
    _P("control", "hash_b64_unicode",
       "import hashlib, base64, unicodedata\nprint(hashlib.sha256(b'x').hexdigest()[:8], "
       "base64.b64encode(b'hi').decode(), unicodedata.name('a'))", OK, match="2d711642 aGk= LATIN SMALL LETTER A"),
    _P("control", "datetime",
       "import datetime\nd = datetime.date(2024, 1, 31) + datetime.timedelta(days=1)\n"
       "print(d.isoformat(), f'{d:%Y/%m}')", OK, match="2024-02-01 2024/02"),
    _P("control", "pprint", "import pprint\npprint.pprint({'b': 1, 'a': [1, 2]})", OK, match="{'a': [1, 2], 'b': 1}"),
    _P("control", "typing_annotations",
       "from typing import List, Optional\ndef f(xs: List[int], k: Optional[int] = None) -> int:\n"
       "    return sum(xs) + (k or 0)\ntotal: int = f([1, 2], 3)\nprint(total)", OK, match="6"),
    _P("control", "hasattr_dunder", "print(hasattr([], '__len__'), hasattr(1, 'nope'), getattr(1, 'nope', 'd'))",
       OK, match="True False d"),
    _P("control", "builtins_mix",
       "print(sorted(zip('ba', [1, 2])), tuple(reversed([1, 2])), bytes([104, 105]), divmod(7, 2), "
       "list(enumerate('ab')), hex(255), chr(65), ord('A'), round(2.567, 2), any([0, 1]), all([]))",
       OK, match="[('a', 2), ('b', 1)] (2, 1) b'hi' (3, 1) [(0, 'a'), (1, 'b')] 0xff A 65 2.57 True True"),
    _P("control", "variables_survive_error", "kept = 41\nkept += 1\nraise ValueError('boom')", BLOCKED),
    _P("control", "big_but_fine", "x = 'a' * 10**6\nprint(len(x), len(list(range(10**6))), 2**1000 % 7)",
       OK, match="1000000 1000000 2"),
    _P("control", "function_attributes", "def f():\n    f.calls += 1\n    return f.calls\nf.calls = 0\nf()\nprint(f())", OK, match="2"),
    _P("control", "main_guard", "def main():\n    print('main ran')\nif __name__ == '__main__':\n    main()", OK, match="main ran"),
    _P("control", "class_name_idiom", "class A:\n    def __repr__(self):\n        return f'{self.__class__.__name__}({vars(self)})'\n    def __init__(self):\n        self.n = 1\nprint(repr(A()), A().__class__.__name__)", OK, match="A({'n': 1}) A"),
    _P("control", "import_fallback", "try:\n    import scipy\nexcept ImportError:\n    scipy = None\nprint(scipy)", OK, match="None"),
    _P("control", "time_and_copy", "import time, copy\nt = time.perf_counter()\nx = [[1], {'a': 2}]\ny = copy.deepcopy(x)\ny[0].append(3)\nprint(x, y, time.perf_counter() >= t)", OK, match="[[1], {'a': 2}] [[1, 3], {'a': 2}] True"),
    _P("control", "while_loop_done", "n = 0\nwhile n < 100000:\n    n += 1\nprint(n)", OK, match="100000"),
    _P("control", "try_finally_ok", "def f():\n    try:\n        return 1\n    finally:\n        print('cleanup')\nprint(f())",
       OK, match="cleanup\n1"),
    _P("control", "history_underscore", "40 + 2", OK, match="42", kernel_only=True),
    # honest code that used to be refused
    _P("control", "mangled_private",
       "class Account:\n    __count = 0\n    __slots__ = ('__balance', 'name')\n    def __init__(self, n):\n"
       "        self.__balance = n\n        self.name = 'a'\n    def __check(self, x):\n        return x <= self.__balance\n"
       "    def take(self, x):\n        if not self.__check(x):\n            raise ValueError('no')\n        self.__balance -= x\n"
       "        Account.__count += 1\n        return (lambda: self.__balance)()\nclass Sub(Account):\n    def peek(self):\n"
       "        return self._Account__balance\na = Sub(10)\nprint(a.take(3), a.peek(), Account._Account__count)",
       OK, match="7 7 1"),
    _P("control", "dunder_all", "__all__ = ['f']\n__all__ += ['g']\nprint(__all__)", OK, match="['f', 'g']"),
    _P("control", "decimal_localcontext",
       "import decimal\nwith decimal.localcontext() as ctx:\n    ctx.prec = 50\n    ctx.rounding = decimal.ROUND_DOWN\n"
       "    a = decimal.Decimal(1) / decimal.Decimal(7)\nb = decimal.Decimal(1) / decimal.Decimal(7)\n"
       "with decimal.localcontext(prec=5) as c2:\n    c = decimal.Decimal(2).sqrt()\nprint(len(str(a)), b, c, c2.prec)",
       OK, match="52 0.1428571428571428571428571429 1.4142 5"),
    _P("control", "exception_notes",
       "try:\n    try:\n        raise ValueError('bad')\n    except ValueError as e:\n        e.add_note('while parsing row 3')\n        raise\n"
       "except ValueError as e:\n    print(e.__notes__, getattr(e, '__notes__', None), getattr(KeyError(), '__notes__', 'none'))",
       OK, match="['while parsing row 3'] ['while parsing row 3'] none"),
    _P("control", "except_star",
       "seen = []\ntry:\n    raise ExceptionGroup('many', [ValueError(1), TypeError(2), ValueError(3)])\n"
       "except* ValueError as g:\n    seen.append(('V', [e.args[0] for e in g.exceptions]))\nexcept* TypeError as g:\n"
       "    seen.append(('T', len(g.exceptions)))\ntry:\n    raise KeyError('k')\nexcept* KeyError as g:\n"
       "    seen.append(type(g).__name__)\neg = ExceptionGroup('m', [ValueError(1), TypeError(2)])\n"
       "m, rest = eg.split(ValueError)\nprint(seen, m.message, len(rest.exceptions), eg.subgroup(TypeError).exceptions)",
       OK, match="[('V', [1, 3]), ('T', 1), 'ExceptionGroup'] m 1 (TypeError(2),)"),
    _P("control", "enum_hooks",
       "import enum\nclass Color(enum.Enum):\n    RED = 'red'\n    @classmethod\n    def _missing_(cls, value):\n"
       "        return cls(value.lower()) if isinstance(value, str) else None\nclass Auto(enum.Enum):\n"
       "    def _generate_next_value_(name, start, count, last_values):\n        return name.lower()\n    NORTH = enum.auto()\n"
       "print(Color('RED'), Auto.NORTH.value)", OK, match="Color.RED north"),
    _P("control", "contextlib",
       "import contextlib\nlog = []\n@contextlib.contextmanager\ndef tag(n):\n    log.append('<' + n)\n    yield n\n"
       "    log.append(n + '>')\nwith tag('a') as t, contextlib.suppress(KeyError):\n    {}['missing']\n"
       "with contextlib.ExitStack() as st:\n    for n in 'xy':\n        st.enter_context(tag(n))\n    st.callback(log.append, 'cb')\n"
       "with contextlib.nullcontext(5) as five:\n    pass\nclass R:\n    def close(self):\n        log.append('closed')\n"
       "with contextlib.closing(R()):\n    pass\nprint(t, five, log)",
       OK, match="a 5 ['<a', 'a>', '<x', '<y', 'cb', 'y>', 'x>', 'closed']"),
    _P("control", "name_error_suggestion", "total_count = 1\ntotal_cont", BLOCKED, match="Did you mean: 'total_count'?",
       kernel_only=True),
    _P("control", "builtin_suggestion", "lenn([1])", BLOCKED, match="Did you mean: 'len'?", kernel_only=True),
    _P("control", "errors_keep_types",
       "out = []\nt = (1, 2)\n"
       "try:\n    t[0] = 1\nexcept TypeError:\n    out.append('tuple')\ntry:\n    del t[0]\nexcept TypeError:\n    out.append('del')\n"
       "try:\n    'abc'[0] = 'x'\nexcept TypeError:\n    out.append('str')\ntry:\n    (1).x = 2\nexcept AttributeError:\n    out.append('int')\n"
       "try:\n    setattr(5, 'x', 1)\nexcept AttributeError:\n    out.append('setattr')\ntry:\n    setattr(int, 'x', 1)\nexcept TypeError:\n    out.append('type')\n"
       "try:\n    len.x = 1\nexcept AttributeError:\n    out.append('builtin')\nprint(out)",
       OK, match="['tuple', 'del', 'str', 'int', 'setattr', 'type', 'builtin']"),
]
# fmt: on
