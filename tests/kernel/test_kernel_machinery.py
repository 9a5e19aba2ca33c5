"""Kernel machinery out of a cell's reach; kernel code never runs a cell's objects outside its limits.

Issue 12, holes 2 and 3, each as a family of payloads against a real kernel: every payload is refused (or
finds nothing), the kernel stays alive and the variables set before it are still there.
"""

from __future__ import annotations

import time

import pytest

from tests.kernel_client import KernelHarness, ok

# Type and function names of kernel objects that no cell may ever hold.
KERNEL_OBJECT_NAMES = (
    "SandboxSession",
    "ReplState",
    "RunTracker",
    "RLMShell",
    "ZMQInteractiveShell",
    "RLMKernel",
    "frame",
    "code",
    "cell",
    "module",
    "line_magic",
    "cell_magic",
    "BudgetTracker",
)

# A str subclass whose every method a kernel might call records that it ran and lies.
LYING_TYPES = """
ran = []
class S(str):
    def startswith(self, *a):
        ran.append('startswith')
        return False
    def isidentifier(self):
        ran.append('isidentifier')
        return True
    def __hash__(self):
        ran.append('hash')
        return hash('keep')
    def __eq__(self, other):
        ran.append('eq')
        return True
    def __len__(self):
        ran.append('len')
        return 1
    def __iter__(self):
        ran.append('iter')
        return iter(['x'])
    def encode(self, *a, **k):
        ran.append('encode')
        return b''
    def strip(self, *a):
        ran.append('strip')
        return 'x'
class L(list):
    def __iter__(self):
        ran.append('list iter')
        return iter([])
    def __len__(self):
        ran.append('list len')
        return 0
class I(int):
    def __radd__(self, other):
        ran.append('radd')
        return 0
    def __add__(self, other):
        ran.append('add')
        return 0
    def __index__(self):
        ran.append('index')
        return 1
    def __lt__(self, other):
        ran.append('lt')
        return False
class R:
    def __repr__(self):
        return S('lying repr')
"""


@pytest.fixture(scope="module")
def kernel():
    harness = KernelHarness(extra_arguments=["--RLMShell.sandbox_limits", "cpu_seconds=3"])
    ok(harness, "keep = 'alive-4711'")
    ok(harness, LYING_TYPES)
    yield harness
    harness.shutdown()


def last_line(kernel: KernelHarness, code: str) -> str:
    return ok(kernel, code).stdout.strip().splitlines()[-1]


def assert_state_kept(kernel: KernelHarness) -> None:
    assert kernel.is_alive()
    assert ok(kernel, "keep").result == "'alive-4711'"


# -- hole 2: no kernel object is reachable ------------------------------------------------------------------
HIDDEN_HELPER_PROBES = [
    "print(repl_get('rlm line magic'), repl_get('rlm cell magic'))",
    "print([n for n in dir() if ' ' in n or 'magic' in n])",
    "print(FINAL_VAR)",  # a plain helper: its repr names no kernel object
]


@pytest.mark.parametrize("code", HIDDEN_HELPER_PROBES)
def test_hidden_helpers_are_not_in_the_namespace(kernel: KernelHarness, code: str) -> None:
    out = ok(kernel, code).stdout
    assert "line_magic" not in out and "cell_magic" not in out and "rlm line magic" not in out, out
    assert_state_kept(kernel)


def test_who_show_vars_and_completion_do_not_list_helpers(kernel: KernelHarness) -> None:
    for code in ("%who", "SHOW_VARS()"):
        assert "magic" not in ok(kernel, code).stdout
    matches = kernel.complete("rl")["matches"]
    assert not [m for m in matches if " " in m], matches


# Magics driven so that IPython's %time/%timeit would copy a frame's locals into the namespace: through a
# function called on the guarded *args path, a lambda, a comprehension, a class body, a method.
FRAME_COPY_PAYLOADS = [
    # the original: a partial of the helper, called on the guarded *args path (its frame holds the session)
    "import functools\nm = repl_get('rlm line magic') or print\n"
    "p = functools.partial(m, 'timeit', '-n1 -r1 probe_0 = 1')\np(*[])",
    "import functools\nm = repl_get('rlm cell magic') or print\n"
    "p = functools.partial(m, 'timeit', '-n1 -r1', 'probe_0 = 1')\np(*[], **{})",
    "def f(*a, **k):\n    %timeit -n1 -r1 probe_1 = 1\nf(*[1], **{'k': 2})",
    "def f(*a):\n    %time probe_2 = 1\nf(*[1])",
    "class C:\n    def m(self, *a):\n        %timeit -n1 -r1 probe_3 = 1\nC().m(*[1, 2])",
    "def f(*a):\n    %%timeit -n1 -r1\n    probe_4 = 1\nf(*[1])",
    "%timeit -n1 -r1 probe_5 = [1 for _ in range(3)]",
    "g = [1]\ndef f(*a):\n    inner = a\n    %timeit -n1 -r1 inner\nf(*g)",
]


@pytest.mark.parametrize("payload", FRAME_COPY_PAYLOADS)
def test_magics_never_copy_kernel_frames_into_the_namespace(kernel: KernelHarness, payload: str) -> None:
    before = set(eval_list(kernel, "dir()"))
    kernel.execute(payload)
    after = set(eval_list(kernel, "dir()"))
    leaked = {n for n in after - before if not n.startswith(("probe_", "f", "C", "g", "m", "p"))}
    for name in ("session", "fn", "args", "kwargs", "shell", "state", "limits", "guard", "obj"):
        assert name not in after, (payload, after - before)
    assert not leaked - {"inner", "a", "k", "self"}, (payload, leaked)  # the function's locals, as IPython
    assert_state_kept(kernel)


def eval_list(kernel: KernelHarness, expr: str) -> list[str]:
    import ast

    return ast.literal_eval(last_line(kernel, f"print({expr})"))


WALK = """
import collections, dataclasses, datetime, functools, itertools, json, operator, re, string, typing
seen, kinds, todo = set(), set(), [(repl_get(n), 0) for n in dir()]
while todo and len(seen) < 20000:
    obj, depth = todo.pop()
    if id(obj) in seen:
        continue
    seen.add(id(obj))
    kinds.add(type(obj).__name__)
    kinds.add(str(getattr(obj, '__qualname__', '')).split('.')[-1])
    if depth >= 2:
        continue
    try:
        names = dir(obj)
    except Exception:
        continue
    for name in names[:300]:
        try:
            todo.append((getattr(obj, name), depth + 1))
        except Exception:
            pass
print(len(seen), 'function' in kinds, 'Facade' in kinds, sorted(kinds & set(FORBIDDEN)))
"""


def test_no_kernel_object_is_reachable_from_the_namespace(kernel: KernelHarness) -> None:
    """Every public attribute path (two steps deep) from every name a cell sees: no kernel object."""
    ok(kernel, f"FORBIDDEN = {list(KERNEL_OBJECT_NAMES)!r}")
    out = ok(kernel, WALK, timeout=120).stdout.strip().splitlines()[-1]
    count, saw_function, saw_facade, bad = out.split(" ", 3)
    assert bad == "[]", out
    assert int(count) > 500 and saw_function == "True" and saw_facade == "True", out  # the walk went far
    assert_state_kept(kernel)


def test_session_cannot_mark_library_classes_as_user_classes(kernel: KernelHarness) -> None:
    """Even with every trick above closed, writing to a library object stays refused."""
    ex = kernel.execute("x = 'abc'\nx.upper = 1")
    assert not ex.ok and ex.error_name in ("SandboxError", "AttributeError"), str(ex)
    assert_state_kept(kernel)


# -- hole 3: kernel code never runs a cell's objects outside its limits -------------------------------------
def attempt(call: str) -> str:
    """A cell that makes `call` and prints the error's type name if it raises."""
    return f"try:\n    {call}\nexcept Exception as e:\n    print(type(e).__name__)"


BOUNDARY_PAYLOADS = [
    "print(repl_get(S('_getattr_')), repl_get(S('keep')))",
    attempt("repl_set(S('x'), 1)"),
    attempt("FINAL_VAR(S('keep'))"),
    attempt("llm_query(S('hi'))"),
    attempt("llm_query('hi', model=S('m'), system=S('s'), max_tokens=I(5))"),
    attempt("llm_query_batched(L([S('a'), S('b')]))"),
    attempt("llm_query_batched([S('a')], model=S('m'))"),
    attempt("rlm_query(S('q'), model=S('m'))"),
    attempt("rlm_query_batched(L([S('q')]))"),
    attempt("map_reduce(S('text'), S('m'), S('r'), n_chunks=I(2), model=S('fast'))"),
    attempt("find_relevant(S('a b c'), S('b'), top_k=I(2))"),
    attempt("extract_functions(S('def f(): pass'), language=S('python'))"),
    attempt("rlm_run(S('q'), context=L([1]), max_iterations=I(1), model=S('m'))"),
    "load_context(S('some text'), kind=S('text'))\nprint(type(context) is str)",
    "data = L([S('a'), {S('k'): I(3)}])\nran.clear()\nload_context(data)\nprint(type(context) is list)",
    "FINAL(S('answer'))\nprint(type(final_answer) is str)",
    "FINAL(R())\nprint(type(final_answer) is str)",
    "%rlm show",
]


@pytest.mark.parametrize("payload", BOUNDARY_PAYLOADS)
def test_helpers_never_call_methods_of_cell_subclasses(kernel: KernelHarness, payload: str) -> None:
    ok(kernel, "ran.clear()")
    ex = kernel.execute(payload, timeout=60)
    assert ex.ok, (payload, str(ex))
    assert "False" not in ex.stdout, (payload, ex.stdout)
    assert eval_list(kernel, "ran") == [], payload
    assert_state_kept(kernel)


def test_exact_types_after_coercion(kernel: KernelHarness) -> None:
    ok(kernel, "load_context(L([S('a'), {S('k'): I(3)}]))")
    out = last_line(
        kernel,
        "print([type(context[0]) is str, type(list(context[1])[0]) is str, type(context[1]['k']) is int])",
    )
    assert out == "[True, True, True]"


# Cell code handed to kernel code that runs outside the cell: finalizers run by namespace repair or garbage
# collection, completion and inspection. Each would hang the kernel if the cell's code ran.
HANGING_FINALIZERS = [
    "def g():\n    try:\n        yield 1\n    finally:\n        while True:\n            pass\n"
    "llm_query = g()\nnext(llm_query)",
    "def g():\n    try:\n        yield 1\n    except BaseException:\n        while True:\n            pass\n"
    "repl_get = g()\nnext(repl_get)",
    "class CM:\n    def __enter__(self):\n        return self\n    def __exit__(self, *a):\n"
    "        while True:\n            pass\n"
    "def g():\n    with CM():\n        yield 1\nFINAL = g()\nnext(FINAL)",
    "def g():\n    try:\n        yield 1\n    finally:\n        (lambda: [0 for _ in iter(int, 1)])()\n"
    "context = g()\nnext(context)",
]


@pytest.mark.parametrize("payload", HANGING_FINALIZERS)
def test_finalizers_of_displaced_helpers_do_not_run_outside_limits(
    kernel: KernelHarness, payload: str
) -> None:
    ok(kernel, payload)
    started = time.monotonic()
    assert_state_kept(kernel)  # the next cell repairs the namespace: the generator is dropped there
    assert time.monotonic() - started < 30
    ok(kernel, "print(callable(llm_query), callable(repl_get), callable(FINAL))")


INTROSPECTION_TARGETS = """
class P:
    @property
    def slow(self):
        while True:
            pass
    fast = classmethod(property(lambda cls: [0 for _ in iter(int, 1)]))
    wrapped = staticmethod(property(lambda self: [0 for _ in iter(int, 1)]))
p = P()
"""


@pytest.mark.parametrize("path", ["p.slow", "P.fast", "p.fast", "P.wrapped", "p.wrapped"])
def test_completion_and_inspection_never_evaluate_cell_objects(kernel: KernelHarness, path: str) -> None:
    ok(kernel, INTROSPECTION_TARGETS)
    for request in (
        lambda: kernel.complete(path + "."),
        lambda: kernel.complete(path),
        lambda: kernel.inspect(path),
        lambda: kernel.inspect(path, detail_level=1),
    ):
        started = time.monotonic()
        request()
        assert time.monotonic() - started < 10, path
    assert_state_kept(kernel)


def test_cell_functions_refuse_to_run_outside_a_cell(kernel: KernelHarness) -> None:
    """The class rule behind the above: cell code called by the kernel between cells refuses at once."""
    ok(kernel, "class D:\n    @property\n    def value(self):\n        return 1\nd = D()")
    reply = kernel.inspect("d.value", detail_level=1)
    assert reply["status"] == "ok"
    assert ok(kernel, "d.value").result == "1"  # inside a cell it runs as usual
    assert_state_kept(kernel)
