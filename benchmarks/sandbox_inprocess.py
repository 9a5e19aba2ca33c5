"""Sandbox overhead in-process, without kernels: module-level code run plain vs restricted, interleaved.

    python -m benchmarks.sandbox_inprocess [--n 1000000] [--reps 7] [CASE ...]

Prints, per case, the median times and the ratio restricted/plain (median and best-of). Complements
`python -m benchmarks.run --only sandbox`, which measures whole cells through jupyter_client.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import time

from rlm_kernel.sandbox import Limits, SandboxSession, cell_limits, new_namespace, restrict_ast

CASES = {
    "empty loop": "for i in range(N):\n    pass",
    "t += i": "t = 0\nfor i in range(N):\n    t += i",
    "t = t + i": "t = 0\nfor i in range(N):\n    t = t + i",
    "x = i * 3": "for i in range(N):\n    x = i * 3",
    "x = i * i": "for i in range(N):\n    x = i * i",
    "x = i % 7": "for i in range(N):\n    x = i % 7",
    "x = i ** 2": "for i in range(N):\n    x = i ** 2",
    "loop cell": "total = 0\nfor i in range(N):\n    total += i * i % 7",
    "loop in a function": (
        "def f(n):\n    t = 0\n    for i in range(n):\n        t += i * i % 7\n    return t\nf(N)"
    ),
    "float arithmetic": "x = 0.5\nt = 0.0\nfor i in range(N):\n    t += x * i - t * 0.001",
    "list +=": "L = []\nfor i in range(N // 10):\n    L += [i]",
    "dict item": "d = {'a': 1}\nfor i in range(N):\n    x = d['a']",
    # comparisons through the stepped guards (sandbox/compare.py): small records, searches of short rows
    "tuple ==": (
        "p = (1, 'a')\nn = 0\nfor i in range(N // 5):\n    q = (i % 3, 'a')\n    if p == q:\n        n += 1"
    ),
    "row in rows": (
        "rows = [[i, str(i), i * 0.5] for i in range(3000)]\nn = 0\n"
        "for i in range(N // 1000):\n    row = [i * 7 % 3000, str(i * 7 % 3000), 0.0]\n"
        "    if row in rows:\n        n += 1"
    ),
    # hashing guards (sandbox/keys.py): binops between names, tuple keys, set algebra, dict methods
    "int binops": ("a = 12345\nt = 0\nfor i in range(N):\n    t = (i - a) + (i & a) + (i | a) + (i ^ a)"),
    "tuple-key dict": (
        "d = {}\nfor i in range(N // 5):\n    k = (i % 100, 'a')\n    d[k] = i\n    x = d[k]\n"
        "    if k in d:\n        x = d.get(k)"
    ),
    "dict get count": (
        "d = {}\nfor i in range(N // 2):\n    w = 'w' + str(i % 50)\n    d[w] = d.get(w, 0) + 1"
    ),
    "set algebra ints": (
        "a = set(range(2000))\nb = set(range(1000, 3000))\nfor i in range(N // 2000):\n"
        "    c = a & b\n    c = a | b\n    c = a - b\n    c = a ^ b\n    c = a.intersection(b)"
    ),
    "set add ints": "s = set()\nfor i in range(N // 2):\n    s.add(i % 1000)\n    s.discard(i % 7)",
    "comprehensions": (
        "rows = [{'id': i, 'sq': i * i, 'tag': str(i % 10)} for i in range(N // 5)]\n"
        "sel = [r['sq'] for r in rows if r['tag'] == '3']\n"
        "by_id = {r['id']: r['sq'] for r in rows[:50000]}\n"
        "pairs = sorted(((r['tag'], r['id']) for r in rows[:50000]), key=lambda p: (p[0], -p[1]))\n"
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("cases", nargs="*", help=f"any of: {', '.join(CASES)}")
    args = parser.parse_args()
    session = SandboxSession(Limits(cpu_seconds=600, wall_seconds=600, cpu_backstop_seconds=0, memory_mb=0))
    for name, source in CASES.items():
        if args.cases and name not in args.cases:
            continue
        plain = compile(ast.parse(source), "<plain>", "exec")
        tree = restrict_ast(ast.parse(source), filename="<sandboxed>", limits=session.limits)
        restricted = compile(tree, "<sandboxed>", "exec")
        a: list[float] = []
        b: list[float] = []
        for _ in range(args.reps):
            ns: dict = {"N": args.n}
            t0 = time.perf_counter()
            exec(plain, ns)  # noqa: S102 - the benchmark's own code
            a.append(time.perf_counter() - t0)
            ns = new_namespace(session)
            ns["N"] = args.n
            with cell_limits(session):  # as the kernel runs cells (cell code refuses to run outside them)
                t0 = time.perf_counter()
                exec(restricted, ns)  # noqa: S102 - restricted code
                b.append(time.perf_counter() - t0)
        ma, mb = statistics.median(a), statistics.median(b)
        print(
            f"{name:20s} plain {ma * 1e3:7.1f} ms  sandbox {mb * 1e3:7.1f} ms  "
            f"ratio {mb / ma:5.2f} (best-of {min(b) / min(a):5.2f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
