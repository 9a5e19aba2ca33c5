"""Size, time, output and memory caps through a real kernel: each family of payloads that used to get past a
cap (or only stopped at the CPU backstop, which kills the kernel) ends in a clear error, with the kernel
process still the same and the variables set before it still there (issue 12, holes 4, 5, 6 and 9).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.kernel.test_behaviour import plain
from tests.kernel_client import Execution, KernelHarness

CAP = 100_000  # RLM_OUTPUT_BYTES of the kernel under test
LIMIT_ERRORS = {"LimitExceeded", "CellTimeout", "MemoryError"}


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelHarness]:
    harness = KernelHarness(
        env={
            "RLM_CPU_SECONDS": "4",
            "RLM_CPU_BACKSTOP_SECONDS": "60",
            "RLM_OUTPUT_BYTES": str(CAP),
        }
    )
    try:
        ex = harness.execute("keep = 41 + 1")
        assert ex.ok, str(ex)
        yield harness
    finally:
        harness.shutdown()


def _pid(kernel: KernelHarness) -> int:
    return kernel.km.provisioner.pid  # type: ignore[union-attr]


def _assert_alive_with_state(kernel: KernelHarness, pid: int) -> None:
    assert kernel.is_alive() and _pid(kernel) == pid, "the kernel process was replaced"
    ex = kernel.execute("keep")
    assert ex.ok and ex.result == "42", str(ex)


def _wire_bytes(ex: Execution) -> int:
    """Bytes of the iopub messages of the request (but the echo of its source) plus its reply, as JSON."""
    sent = [m for m in ex.messages if m["msg_type"] != "execute_input"]
    return sum(len(json.dumps(m["content"])) for m in sent) + len(json.dumps(ex.reply))


# -- hole 4: sizes refused before the C code starts --------------------------------------------------------
REFUSED_BEFORE_START = [
    "from collections import deque\nx = deque([1]) * 10**10",
    "from collections import deque\nx = deque([1])\nx *= 10**10",
    "from collections import UserList\nx = UserList([1]) * 10**10",
    "from collections import UserString\nx = UserString('ab') * 10**10",
    "x = 10**10 * [0]",
    "x = (1,) * 10**10",
    "x = bytearray(b'a')\nx *= 10**10",
    "import operator\nfrom collections import deque\nx = operator.mul(deque([1]), 10**10)",
    "x = int.from_bytes(b'\\xff' * 5_000_000, 'big')",
    "x = (7).from_bytes(b'\\xff' * 5_000_000, 'little')",
    "x = 3 ** 10_000_000",
    "x = pow(3, 10_000_000)",
    "x = (-3) ** 2_000_000",
    "x = pow(3, (1 << 50_000) - 1, (1 << 50_000) + 1)",
    "x = 1 << 3_000_000",
    "x = (1 << 1_500_000) * (1 << 1_500_000)",
    "from fractions import Fraction\nx = Fraction(3, 2) ** 10**8",
    "from fractions import Fraction\nx = 2 ** Fraction(10**8)",
    "from fractions import Fraction\nx = Fraction(1 << 1_500_000, 3) * Fraction(1 << 1_500_000, 7)",
    "import math\nx = math.prod([1 << 1_500_000] * 10)",
    "import math\nx = math.perm(10**6, 10**6)",
    "import math\nx = math.factorial(10**7)",
    "import math\nx = math.lcm(1 << 1_500_000, (1 << 1_500_000) - 1)",
    "import random\nx = random.getrandbits(10**7)",
    "import decimal\nx = decimal.Context(prec=10**6)",
    "import decimal\nwith decimal.localcontext() as ctx:\n    ctx.prec = 10**6",
    "import decimal\nwith decimal.localcontext(prec=10**6):\n    pass",
]


@pytest.mark.parametrize("code", REFUSED_BEFORE_START)
def test_oversized_operation_is_refused_and_kernel_lives(kernel: KernelHarness, code: str) -> None:
    pid = _pid(kernel)
    ex = kernel.execute(code, timeout=120)
    assert ex.error_name == "LimitExceeded", str(ex)
    assert "limit" in (ex.error_value or "")
    _assert_alive_with_state(kernel, pid)


# -- hole 4: long loops stopped by the soft limit (CellTimeout), not the backstop ---------------------------
STOPPED_BY_SOFT_LIMIT = [
    "from collections import Counter\nx = sum(1 for _ in Counter(a=10**12).elements())",
    "from collections import Counter\nx = list(Counter(a=10**12).elements())",
    "import itertools\nx = list(itertools.product(range(10**4), repeat=3))",
    "import math\nx = math.lcm(*range(1, 10**7))",
    "x = list(map(sum, [range(10**8)] * 100))",
    "big = [0] * 10**7\nx = list(map(big.count, [0] * 10_000))",
    "big = [0] * 10**7\nx = list(filter(big.count, [0] * 10_000))",
    "big = [0] * 10**7\nx = sorted([0] * 10_000, key=big.count)",
    "big = [0] * 10**7\nx = max([0] * 10_000, key=big.count)",
    "import itertools\nx = sum(itertools.chain.from_iterable([range(10**8)] * 100))",
    "import itertools\nx = sum(itertools.chain(*[range(10**8)] * 100))",
    "import itertools\nbig = [0] * 10**7\nx = list(itertools.starmap(big.count, [(0,)] * 10_000))",
    "x = sum([1 << 1_999_000] * 10**7)",
]


@pytest.mark.parametrize("code", STOPPED_BY_SOFT_LIMIT)
def test_long_c_loop_stops_at_the_soft_limit(kernel: KernelHarness, code: str) -> None:
    pid = _pid(kernel)
    ex = kernel.execute(code, timeout=240)
    assert ex.error_name in LIMIT_ERRORS, str(ex)
    _assert_alive_with_state(kernel, pid)


def test_honest_big_numbers_still_work(kernel: KernelHarness) -> None:
    code = (
        "import math, decimal\nfrom fractions import Fraction\nfrom collections import Counter, deque\n"
        "print((2 ** 1_999_999).bit_length(), (3 ** 1000) % 7, pow(3, 65537, (1 << 4096) + 1) > 0)\n"
        "print(Fraction(3, 2) ** 10, math.prod(range(1, 10)), math.comb(50, 3), math.lcm(4, 6, 10))\n"
        "print(sorted(Counter(a=2, b=1).elements()), len(deque([1, 2]) * 3), "
        "int.from_bytes(b'\\x01\\x00', 'big'))\n"
        "with decimal.localcontext() as ctx:\n    ctx.prec = 50\n    print(decimal.Decimal(1) / 7)\n"
        "import itertools\n"
        "print(sum([0.5] * 3), sum([[1], [2]], []), max([3, -7, 2], key=abs), list(map(str, [1, 2])), "
        "list(filter(None, [0, 1, 2])), list(itertools.chain.from_iterable(['ab', 'c'])))"
    )
    ex = kernel.execute(code, timeout=120)
    assert ex.ok, str(ex)
    lines = ex.stdout.splitlines()
    assert lines[0] == "2000000 4 True"
    assert lines[1] == "59049/1024 362880 19600 60"
    assert lines[2] == "['a', 'a', 'b'] 6 256"
    assert lines[3] == "0.14285714285714285714285714285714285714285714285714"
    assert lines[4] == "1.5 [1, 2] -7 ['1', '2'] [1, 2] ['a', 'b', 'c']"


# -- hole 6: one deep expression gets an execute_reply -----------------------------------------------------
@pytest.mark.parametrize(
    "code",
    ["1+" * 200_000 + "1", "x = " + "(" * 100_000 + "1" + ")" * 100_000, "-" * 100_000 + "1"],
    ids=["sum_chain", "parentheses", "unary"],
)
def test_deeply_nested_cell_gets_an_error_reply(kernel: KernelHarness, code: str) -> None:
    pid = _pid(kernel)
    ex = kernel.execute(code, timeout=180)
    assert ex.status == "error" and ex.error_name in {"SyntaxError", "SandboxError"}, str(ex)
    assert "nested" in (ex.error_value or "") or "too many" in (ex.error_value or ""), str(ex)
    assert _wire_bytes(ex) < 3 * CAP
    _assert_alive_with_state(kernel, pid)


# -- hole 5: every output channel under the cap ------------------------------------------------------------
def test_huge_exception_message_is_capped(kernel: KernelHarness) -> None:
    ex = kernel.execute("raise ValueError('m' * 50_000_000)", timeout=120)
    assert ex.error_name == "ValueError" and "message truncated" in (ex.error_value or ""), str(ex)
    assert _wire_bytes(ex) < 4 * CAP


def test_huge_message_of_own_exception_class_is_capped(kernel: KernelHarness) -> None:
    code = "class E(Exception):\n    def __str__(self):\n        return 'q' * 20_000_000\nraise E()"
    ex = kernel.execute(code, timeout=120)
    assert ex.error_name == "E", str(ex)
    assert _wire_bytes(ex) < 4 * CAP


def test_deep_raise_from_chain_is_rendered_cut_and_capped(kernel: KernelHarness) -> None:
    code = (
        "def chain(n):\n"
        "    try:\n"
        "        raise KeyError('start')\n"
        "    except KeyError as first:\n"
        "        e = first\n"
        "    for i in range(n):\n"
        "        try:\n"
        "            raise ValueError(f'level {i}') from e\n"
        "        except ValueError as nxt:\n"
        "            e = nxt\n"
        "    raise e\n"
        "chain(3000)"
    )
    pid = _pid(kernel)
    ex = kernel.execute(code, timeout=180)
    assert ex.error_name == "ValueError" and ex.error_value == "level 2999", str(ex)
    assert "earlier chained exception(s) not shown" in "\n".join(ex.traceback)
    assert _wire_bytes(ex) < 4 * CAP
    _assert_alive_with_state(kernel, pid)


_SHARED_NEST = "t = ()\nfor _ in range(40):\n    t = (t, t)\n"  # 80 objects, 2**40 visits for one repr

STOPPED_MESSAGES = [
    "raise ValueError(t)",
    "assert False, t",
    "raise KeyError(t)",
    "class E(Exception):\n    def __str__(self):\n        return super().__str__()\nraise E(t)",
    "try:\n    raise ValueError(t)\nexcept ValueError as e:\n    raise TypeError('x') from e",
    "try:\n    raise ValueError(t)\nexcept ValueError:\n    raise TypeError('x')",
    "e = TypeError('x')\ne.add_note('n')\ntry:\n    raise KeyError(t)\nexcept KeyError:\n    raise e",
]


@pytest.mark.parametrize("code", STOPPED_MESSAGES)
def test_message_of_a_shared_nest_stops_at_the_limit(kernel: KernelHarness, code: str) -> None:
    """The text of a cell's exception holding a tuple nested with sharing is one C repr (2**40 visits), built
    by IPython's traceback after the cell's frames are gone: the time limit stops it (red team 7)."""
    pid = _pid(kernel)
    ex = kernel.execute(_SHARED_NEST + code, timeout=60)
    assert ex.error_name == "CellTimeout", str(ex)
    _assert_alive_with_state(kernel, pid)


def test_message_of_a_shared_nest_in_user_expressions_stops(kernel: KernelHarness) -> None:
    pid = _pid(kernel)
    code = _SHARED_NEST + "def boom():\n    raise ValueError(t)"
    ex = kernel.execute(code, user_expressions={"err": "boom()"}, timeout=60)
    assert ex.ok, str(ex)
    assert ex.user_expressions["err"]["ename"] == "CellTimeout", ex.user_expressions
    _assert_alive_with_state(kernel, pid)


ORDINARY_ERRORS = [
    ("raise ValueError('a', 2)", "ValueError", "('a', 2)"),
    ("d = {}\nd[('k', 1)]", "KeyError", "('k', 1)"),
    ("d = {}\nd['k']", "KeyError", "'k'"),
    ("raise KeyError()", "KeyError", ""),
    ("raise OSError(2, 'gone', 'f.txt')", "FileNotFoundError", "[Errno 2] gone: 'f.txt'"),
    (
        "class E(Exception):\n    def __str__(self):\n        return 'own ' + repr(self.args)\nraise E(1)",
        "E",
        "own (1,)",
    ),
    ("raise ExceptionGroup('g', [ValueError(1), TypeError(2)])", "ExceptionGroup", "g (2 sub-exceptions)"),
    ("assert 1 == 2, [1, {'a': (2,)}]", "AssertionError", "[1, {'a': (2,)}]"),
    (
        "raise UnicodeDecodeError('utf-8', b'\\xff', 0, 1, 'bad')",
        "UnicodeDecodeError",
        "'utf-8' codec can't decode byte 0xff in position 0: bad",
    ),
]


@pytest.mark.parametrize(("code", "name", "value"), ORDINARY_ERRORS)
def test_ordinary_error_messages_are_python_s(
    kernel: KernelHarness, code: str, name: str, value: str
) -> None:
    ex = kernel.execute(code, timeout=60)
    assert (ex.error_name, ex.error_value) == (name, value), str(ex)
    shown = f"{name}: {value}" if value else name
    assert shown in plain(ex.traceback), plain(ex.traceback)


def test_ordinary_chain_and_notes_are_shown_as_python_shows_them(kernel: KernelHarness) -> None:
    code = (
        "try:\n    {}['k']\nexcept KeyError as e:\n    x = ValueError('outer')\n    x.add_note('a note')\n"
        "    raise x from e"
    )
    ex = kernel.execute(code, timeout=60)
    text = plain(ex.traceback)
    assert (ex.error_name, ex.error_value) == ("ValueError", "outer"), str(ex)
    for part in ("KeyError: 'k'", "direct cause", "ValueError: outer", "a note"):
        assert part in text, text


def test_display_updates_are_capped(kernel: KernelHarness) -> None:
    code = (
        "h = display('start', display_id=True)\n"
        "for i in range(200):\n"
        "    h.update('u' * 90_000)\n"
        "for i in range(200):\n"
        "    display('d' * 90_000, display_id='same')\n"
        "print('done')"
    )
    ex = kernel.execute(code, timeout=240)
    assert ex.ok and "done" in ex.stdout, str(ex)
    assert _wire_bytes(ex) < 25 * CAP, _wire_bytes(ex)  # 400 updates of 90 kB would be 36 MB
    assert "output truncated" in ex.stdout


def test_user_expressions_are_capped(kernel: KernelHarness) -> None:
    ex = kernel.execute(
        "big = 'b' * 10_000_000",
        user_expressions={"a": "big", "b": "big + 'c'", "err": "int(big)"},
        timeout=120,
    )
    assert ex.ok, str(ex)
    values = ex.user_expressions
    assert values["a"]["status"] == "ok" and "output truncated" in values["a"]["data"]["text/plain"]
    assert values["err"]["status"] == "error" and values["err"]["ename"] == "ValueError"
    assert len(json.dumps(ex.reply)) < 4 * CAP


# -- hole 9: RLM_MEMORY_MB counts what cells allocate ------------------------------------------------------
def test_memory_limit_counts_what_the_cell_allocates() -> None:
    # RLM_MAX_SEQUENCE=0: the 2 GB string below must meet the memory limit, not the repetition cap
    with KernelHarness(env={"RLM_MEMORY_MB": "512", "RLM_MAX_SEQUENCE": "0"}) as kernel:
        ex = kernel.execute("s = 'a' * (10 * 1024 * 1024)\nlen(s)", timeout=60)
        assert ex.ok and ex.result == str(10 * 1024 * 1024), str(ex)
        ex = kernel.execute("t = 'a' * (150 * 1024 * 1024)\nlen(t)", timeout=60)
        assert ex.ok, str(ex)
        pid = _pid(kernel)
        ex = kernel.execute("del t\nu = 'a' * (2 * 1024**3)", timeout=60)
        assert ex.error_name == "MemoryError", str(ex)
        assert kernel.is_alive() and _pid(kernel) == pid
        ex = kernel.execute("len(s)")
        assert ex.ok and ex.result == str(10 * 1024 * 1024), str(ex)
