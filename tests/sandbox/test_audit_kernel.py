"""The audit hook inside a real `rlm` kernel: honest cells that touch the hook's events keep working, and
library paths that run strings get refused by the hook even when the first line is missing.

To stand for "a library path the policy missed", the kernel is started with a startup file (the notebook
author's `--IPKernelApp.exec_files`, trusted, run before any cell) that puts the *raw* standard-library
functions into the namespace: the unwrapped `functools.singledispatch`, `timeit.timeit` (compiles and runs
a string), `os.system` behind a plain function, `typing.get_type_hints`. Cells then call them; every call must
be refused by the hook with the kernel alive, earlier variables kept, and no canary in any reply.
"""
# ruff: noqa: E501 - tables of cells read best one per line

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_client import KernelHarness
from tests.sandbox.payloads import CANARY_ENV_VAR, CANARY_VALUE

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
FILE_TEXT = f"api_key={CANARY_VALUE}"

# The namespace's `__builtins__` is the sandbox's, even for the startup file: take the real ones from `len`.
STARTUP = """
_b = len.__self__
_functools, _timeit, _typing = _b.__import__("functools"), _b.__import__("timeit"), _b.__import__("typing")
_os, _subprocess = _b.__import__("os"), _b.__import__("subprocess")
raw_singledispatch = _functools.singledispatch
raw_timeit = _timeit.timeit
raw_get_type_hints = _typing.get_type_hints
def raw_system(command):
    return _os.system(command)
def raw_popen(args):
    return _subprocess.run(args).returncode
def raw_open(path, mode="r"):
    with _b.open(path, mode) as f:
        return f.read() if "r" in mode else f.write("x")
def raw_import(name):
    return _b.__import__(name).__name__
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KernelHarness, Path]]:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text(FILE_TEXT + "\n")
    startup = outside / "startup.py"
    startup.write_text(STARTUP)
    cwd = tmp_path_factory.mktemp("notebook")
    (cwd / "data.txt").write_text("hello from the roots\n")
    harness = KernelHarness(
        env={CANARY_ENV_VAR: CANARY_VALUE, "RLM_CPU_SECONDS": "10"},
        cwd=str(cwd),
        extra_arguments=[f"--IPKernelApp.exec_files={[str(startup)]!r}"],
    )
    try:
        assert harness.execute("kept = 41").ok
        yield harness, outside
    finally:
        harness.shutdown()


def _run(harness: KernelHarness, code: str):
    ex = harness.execute(code, timeout=120)
    text = ANSI.sub("", ex.all_text)
    assert CANARY_VALUE not in text and FILE_TEXT not in text, text[-2000:]
    return ex


def _alive(harness: KernelHarness) -> None:
    after = harness.execute("kept + 1", timeout=60)
    assert after.ok and after.result == "42", after


LEAK = (
    "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
    ".__init__.__globals__['sys'].modules['io'].open({secret!r}).read()"
)

HOOK_REFUSED = [
    (
        "singledispatch",
        'f = raw_singledispatch(lambda x: 0)\ndef g(x: "' + LEAK + '"):\n    return 1\nf.register(g)',
    ),
    ("get_type_hints", 'def g(x: "' + LEAK + '"):\n    return 1\nraw_get_type_hints(g)'),
    ("timeit_string", "raw_timeit(" + repr(LEAK) + ", number=1)"),
    ("timeit_system", "raw_timeit(\"__import__('os').system('touch {marker}')\", number=1)"),
    ("os_system", "raw_system('touch {marker}')"),
    ("subprocess", "raw_popen(['touch', '{marker}'])"),
    ("open_secret", "raw_open({secret!r})"),
    ("open_write", "raw_open('{marker}', 'w')"),
    ("import_denied", "raw_import('smtplib')"),
]


@pytest.mark.parametrize(("name", "code"), HOOK_REFUSED, ids=[n for n, _ in HOOK_REFUSED])
def test_hook_refuses_in_kernel(kernel: tuple[KernelHarness, Path], name: str, code: str) -> None:
    harness, outside = kernel
    marker = outside / f"ran-{name}"
    cell = code.replace("{marker}", str(marker)).replace("{secret!r}", repr(str(outside / "secret.txt")))
    ex = _run(harness, cell)
    assert ex.status == "error" and ex.error_name == "SandboxError", str(ex)
    assert "audit hook" in ex.error_value and "\n" not in ex.error_value, ex.error_value
    assert not marker.exists()
    _alive(harness)


HONEST = [
    ("load_context", "load_context('data.txt')\nprint(context)", "hello from the roots"),
    (
        "strptime_first_import",
        "import datetime\nprint(datetime.datetime.strptime('2024-05-06', '%Y-%m-%d').day)",
        "6",
    ),
    ("time_magic", "%time tv = sum(range(1000))\nprint(tv)", "499500"),
    ("timeit_magic", "%timeit -n 3 -r 1 sum(range(10))", "loops each"),
    (
        "dataclass_namedtuple",
        "import dataclasses, collections, typing\n@dataclasses.dataclass\nclass D:\n    a: int = 1\nP = collections.namedtuple('P', 'x y')\nclass Q(typing.NamedTuple):\n    z: int\nprint(D(), P(1, 2), Q(3))",
        "D(a=1) P(x=1, y=2) Q(z=3)",
    ),
    (
        "enum_typing",
        "import enum, typing\nE = enum.Enum('E', 'a b')\nT = typing.TypeVar('T')\nprint(E.b.value, T)",
        "2 ~T",
    ),
    (
        "library_traceback",
        "import json\ntry:\n    json.loads('{')\nexcept ValueError as e:\n    print('caught', type(e).__name__)",
        "caught JSONDecodeError",
    ),
    (
        "display",
        "display({'a': 1})",
        "{'a': 1}",
    ),
]


@pytest.mark.parametrize(("name", "code", "expected"), HONEST, ids=[n for n, _, _ in HONEST])
def test_honest_cells_work_with_the_hook(
    kernel: tuple[KernelHarness, Path], name: str, code: str, expected: str
) -> None:
    harness, _ = kernel
    ex = _run(harness, code)
    assert ex.ok, str(ex)
    assert expected in ANSI.sub("", ex.all_text), str(ex)
    _alive(harness)


def test_uncaught_library_error_shows_a_traceback(kernel: tuple[KernelHarness, Path]) -> None:
    harness, _ = kernel
    ex = _run(harness, "import json\njson.loads('{')")
    assert ex.error_name == "JSONDecodeError", str(ex)
    _alive(harness)


def test_inspect_and_user_expressions_work(kernel: tuple[KernelHarness, Path]) -> None:
    harness, _ = kernel
    reply = harness.inspect("len", 3)
    assert reply["status"] == "ok" and reply["found"], reply
    ex = harness.execute("kept", user_expressions={"twice": "kept * 2"})
    assert ex.user_expressions["twice"]["data"]["text/plain"] == "82", ex.user_expressions
