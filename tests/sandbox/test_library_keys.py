"""The keyed twins of library_keys.py give the library's results: the same code run by a plain Python (no
twins installed) and here (twins installed), with cheap keys (the library's own method) and costly ones
(the stepped loops: nested tuples, and tuples of objects whose `__eq__`/`__hash__` are Python code)."""

from __future__ import annotations

import subprocess
import sys

from rlm_kernel.sandbox.library_keys import install_keyed_twins

SNIPPET = r"""
import collections
class P:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, P) and self.v == o.v
    def __hash__(self):
        return hash(self.v) % 7
    def __repr__(self):
        return f"P({self.v})"
def keys(kind):
    if kind == "cheap":
        return ["a", "b", (1, 2), 3, "c"]
    if kind == "nested":
        return [((i, i),) * 40 for i in range(5)]
    return [(P(i), P(i + 1)) + ("w",) * 20 for i in range(5)]
out = []
for kind in ("cheap", "nested", "objects"):
    a, b, c, d, e = keys(kind)
    x = collections.Counter({a: 3, b: 1, c: -2, d: 0})
    y = collections.Counter({a: 1, b: 4, e: 2, c: -5})
    out.append([sorted(map(repr, r.items())) for r in (x + y, x - y, x | y, x & y, +x, -x, y - x, y | x)])
    for op in ("__iadd__", "__isub__", "__ior__", "__iand__"):
        z = collections.Counter(x)
        getattr(z, op)(y)
        out.append((op, sorted(map(repr, z.items()))))
    z = collections.Counter(x)
    z.update({a: 2, e: 7})
    z.update([b, b, e])
    z.subtract({a: 1, d: 4})
    z.subtract([e, c])
    del z[b]
    del z[(9, 9, 9)]
    out.append(("upd", list(map(repr, z.items()))))
    out.append((x == y, x <= x + y, x >= y, x == collections.Counter(x), collections.Counter(x) <= x))
    w = collections.Counter({a: (1, 2), b: (1, 3), c: (1, 2)})
    common = collections.Counter({a: 5, b: 2, c: 5, d: 1}).most_common()
    out.append(([repr(p) for p in common], repr(w.most_common(2))))
    u = collections.UserDict({a: 1, b: 2})
    u[c] = 3
    u[a] = 9
    del u[b]
    v = u | {d: 4, a: 0}
    t = {e: 5} | u
    u |= {e: 6}
    u |= [(d, 8)]
    out.append(("ud", [repr(i) for i in (u.data, v.data, t.data, type(v).__name__, type(t).__name__)]))
    cm = collections.ChainMap({a: 1}, {b: 2, a: 3})
    cm[c] = 4
    cm[b] = 5
    del cm[c]
    popped = cm.pop(b)
    missing = []
    try:
        del cm[e]
    except KeyError as exc:
        missing.append(str(exc))
    try:
        cm.pop(e)
    except KeyError as exc:
        missing.append(str(exc))
    out.append(("cm", repr(cm.maps), popped, len(cm), list(map(repr, cm)), missing, cm.pop(e, "dflt")))
    out.append(("cmf", repr(collections.ChainMap.fromkeys([a, b, a], 0).maps),
                repr(collections.ChainMap.fromkeys([c]).maps)))
    m = cm | {d: 7}
    r = {e: 1, a: 0} | cm
    cm |= {e: 8}
    out.append(("cmor", repr(m.maps), repr(r.maps), repr(cm.maps)))
print(repr(out))
"""


def _plain() -> str:
    done = subprocess.run([sys.executable, "-c", SNIPPET], capture_output=True, text=True, check=True)
    return done.stdout


def _twinned(capsys: object) -> str:
    install_keyed_twins()
    namespace: dict[str, object] = {}
    exec(compile(SNIPPET, "<snippet>", "exec"), namespace)  # noqa: S102 - test code
    return capsys.readouterr().out  # type: ignore[attr-defined]


def test_twins_give_the_library_results(capsys: object) -> None:
    assert _twinned(capsys) == _plain()
