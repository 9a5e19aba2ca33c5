"""Numeric fast paths and unguarded in-place operators: same results as the guards, same caps.

The policy runs `a * b`, `a % b`, `a ** 2`, `x op= y` natively when it can prove the guards would let them
through (see fastpath.fast_plan); everything else must still hit the guards.
"""

from __future__ import annotations

import ast
import itertools

import pytest

from rlm_kernel.sandbox import (
    Limits,
    SandboxSession,
    cell_limits,
    new_namespace,
    register_sandboxed_filename,
    restrict_ast,
)
from rlm_kernel.sandbox.errors import LimitExceeded, SandboxError
from tests.sandbox.conftest import TEST_LIMITS


def _run(session: SandboxSession, source: str, *, fast: bool = True, **names: object) -> dict:
    tree = restrict_ast(ast.parse(source), filename="<fast-test>", limits=session.limits, fast_paths=fast)
    register_sandboxed_filename("<fast-test>")  # checked code, as the kernel registers every cell's
    code = compile(tree, "<fast-test>", "exec")
    ns = new_namespace(session)
    ns.update(names)
    with cell_limits(session):  # as the kernel runs every cell (cell code refuses to run outside limits)
        exec(code, ns)  # noqa: S102 - restricted code under test
    return ns


def _outcome(session: SandboxSession, source: str, fast: bool, **names: object) -> tuple[str, object]:
    try:
        return "ok", _run(session, source, fast=fast, **names)["r"]
    except Exception as exc:  # noqa: BLE001 - the outcome is compared, whatever it is
        return type(exc).__name__, None


class Own:
    def __init__(self, v: int) -> None:
        self.v = v

    def __mul__(self, other: object) -> str:
        return f"mul{other!r}"

    __rmul__ = __mul__

    def __mod__(self, other: object) -> str:
        return f"mod{other!r}"


VALUES = [
    0,
    7,
    -3,
    2**40,
    -(2**63),
    2**64,
    2**200,
    1.5,
    -0.0,
    float("inf"),
    float("nan"),
    True,
    "ab",
    "%d",
    [1, 2],
]
EXPRESSIONS = [
    "r = a * b",
    "r = a * b % 7",
    "r = (a % 5) * (b % 3)",
    "r = a ** 2 * b",
    "r = a * b - a * 0.5",
    "r = -a * ~b if 0 else -a * b",
    "r = (a << 3) * b",
    "r = a // 3 * b + a / 7",
    "r = a; r *= b",
    "r = a; r %= 7",
    "r = a; r **= 3",
    "r = a; r += b * a",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_fast_path_matches_guards(session: SandboxSession, expr: str) -> None:
    """For every pair of operand kinds, the fast path gives what the guards alone give (value or error)."""
    for a, b in itertools.product(VALUES, VALUES[:9] + ["ab"]):
        fast = _outcome(session, expr, True, a=a, b=b)
        slow = _outcome(session, expr, False, a=a, b=b)
        assert fast[0] == slow[0], (expr, a, b, fast, slow)
        if fast[0] == "ok" and fast[1] == fast[1]:  # NaN != NaN
            assert fast[1] == slow[1] and type(fast[1]) is type(slow[1]), (expr, a, b)


def test_fast_path_is_emitted(session: SandboxSession) -> None:
    text = ast.unparse(restrict_ast(ast.parse("t += i * i % 7"), filename="<t>", limits=session.limits))
    assert "_type_(i) is _int_" in text and "_mod_(_mul_(i, i), 7)" in text
    text = ast.unparse(restrict_ast(ast.parse("t += i"), filename="<t>", limits=session.limits))
    assert text == "t += i"
    text = ast.unparse(restrict_ast(ast.parse("x = i % 7"), filename="<t>", limits=session.limits))
    assert text == "x = i % 7 if _type_(i) is _int_ or _type_(i) is _float_ else _mod_(i, 7)"


class _ClaimsToBeInt(type):
    def __eq__(cls, other: object) -> bool:
        return True

    def __hash__(cls) -> int:
        return hash(int)


class _Text(str, metaclass=_ClaimsToBeInt):
    pass


def test_metaclass_eq_cannot_pass_the_type_test(session: SandboxSession) -> None:
    """A str whose metaclass claims equality with int still takes the guarded path (identity tests)."""
    assert type(_Text("x")) in (int, float)  # what an `in` test would have let through
    with pytest.raises(LimitExceeded):
        _run(session, "y = f % 5", f=_Text("%200000d"))
    with pytest.raises(LimitExceeded):
        _run(session, "f %= 5", f=_Text("%200000d"))
    with pytest.raises(LimitExceeded):
        _run(session, "y = f * n", f=_Text("ab"), n=10**9)


@pytest.mark.parametrize(
    "source",
    [
        "x = 2 ** 5_000_000\ny = x * x * 3",
        "x = 1 << 6_000_000\ny = x * x % 7",
        "x = 1 << 6_000_000\nx *= x",
        "x = 2 ** 3_000_000\ny = x ** 4",
        "s = 'ab'\nn = 10 ** 9\ny = s * n",
        "s = [1]\ns *= 10 ** 9",
        "f = '%200000d'\ny = f % 5",
        "f = '%200000d'\nf %= 5",
        "y = '%200000d' % 5",
        "y = '%*d' % (200000, 5)",
        "int = str\nfloat = str\nf = '%200000d'\ny = f % 5",
    ],
)
def test_caps_still_apply(session: SandboxSession, source: str) -> None:
    with pytest.raises(LimitExceeded):
        _run(session, source)


def test_small_int_cap_uses_narrower_fast_path() -> None:
    session = SandboxSession(Limits(**{**TEST_LIMITS, "max_int_bits": 100}), seed=1)
    assert _run(session, "x = 2 ** 40\ny = x * x")["y"] == 2**80
    with pytest.raises(LimitExceeded):
        _run(session, "x = 2 ** 60\ny = x * x")
    with pytest.raises(LimitExceeded):
        _run(session, "x = 2 ** 60\nx *= x")


def test_in_place_operators_keep_object_semantics(session: SandboxSession) -> None:
    ns = _run(session, "a = [1]\nb = a\na += [2]\na *= 2\nc = {1}\nd = c\nc |= {2}\ns = 'x'\ns += 'y'\n")
    assert ns["b"] is ns["a"] and ns["a"] == [1, 2, 1, 2]
    assert ns["d"] is ns["c"] and ns["c"] == {1, 2}
    assert ns["s"] == "xy"
    ns = _run(session, "o = Own(1)\no *= 3\np = Own(2)\np %= 4", Own=Own)
    assert ns["o"] == "mul3" and ns["p"] == "mod4"


@pytest.mark.parametrize("source", ["_type_(1)", "x = _int_", "_float_ = 1", "def f(_float_): pass"])
def test_fast_path_names_are_not_for_cells(session: SandboxSession, source: str) -> None:
    with pytest.raises(SandboxError):
        _run(session, source)


def test_fast_path_in_functions_comprehensions_and_classes(session: SandboxSession) -> None:
    ns = _run(
        session,
        "def f(n):\n    t = 0\n    for i in range(n):\n        t += i * i % 7\n    return t\n"
        "a = f(100)\nb = [i * i for i in range(5)]\n"
        "class C:\n    k = 3\n    sq = k * k\n",
    )
    assert ns["a"] == sum(i * i % 7 for i in range(100))
    assert ns["b"] == [0, 1, 4, 9, 16] and ns["C"].sq == 9


def test_no_user_code_between_the_test_and_the_operation(session: SandboxSession) -> None:
    """User code that runs while the expression is evaluated (an `__add__`) cannot swap an operand that was
    already tested: the test sits right before the guarded operation, and every name in it is checked."""
    code = (
        "class T:\n"
        "    def __add__(self, other):\n"
        "        global a\n"
        "        a = 'ab'\n"
        "        return 0\n"
        "a = 3\n"
        "b = 10 ** 9\n"
        "t = T()\n"
    )
    for expr in ["y = (t + 1) + a * b", "y = ((t + 1) * b) + a * b", "y = (t + 1) - a * b % 7"]:
        with pytest.raises(LimitExceeded):
            _run(session, code + expr)


def test_only_names_of_guarded_operations_are_tested(session: SandboxSession) -> None:
    text = ast.unparse(restrict_ast(ast.parse("t += x * i + t * 0.5"), filename="<t>", limits=session.limits))
    assert "_type_(x)" in text and "_type_(i)" in text and "_type_(t)" not in text
    assert _run(session, "t = 1.0\nx = 2\ni = 3\nt += x * i + t * 0.5")["t"] == 7.5
    # `-` is guarded too (set algebra in steps, setops.py): its operands' names are tested with the rest
    text = ast.unparse(restrict_ast(ast.parse("t += x * i - t * 0.5"), filename="<t>", limits=session.limits))
    assert "_type_(t)" in text and "_sub_(" in text
    assert _run(session, "t = 1.0\nx = 2\ni = 3\nt += x * i - t * 0.5")["t"] == 6.5


# -- `for i in range(...)`: the loop's flag proves `i` for the first statement only -------------------------
def _text(source: str, **limits: object) -> str:
    return ast.unparse(restrict_ast(ast.parse(source), filename="<fast-test>", limits=Limits(**limits)))


def test_range_loop_flag_replaces_the_test_of_the_loop_variable() -> None:
    text = _text("total = 0\nfor i in range(10):\n    total += i * i % 7")
    assert "_range_ok_(" in text and "if _tmp0 or (" in text, text


@pytest.mark.parametrize(
    "source",
    [
        "for i in range(3):\n    f()\n    x = i * i",  # not the first statement
        "for i in range(3):\n    x = f() + i * i",  # the fast path is not the whole statement
        "for i in range(3):\n    x = t * 0.5 + i * i",  # ...nor here: `t * 0.5` may run user code first
        "for i, j in range(3):\n    x = i * i",  # not a plain name
        "for i in range(3):\n    x = (i := 5) * i",  # not pure arithmetic
        "for i in range(3):\n    x = 2 * 3",  # does not use the loop variable
    ],
)
def test_range_loop_flag_only_where_it_is_sound(source: str) -> None:
    assert "_range_ok_" not in _text(source)


def test_range_loop_results_match_guarded(session: SandboxSession) -> None:
    source = (
        "r = []\nfor i in seq:\n    t = i * i % 7 + i ** 3\n    r.append(t)\n"
        "for i in seq:\n    acc *= i\nr.append(acc)\n"
    )
    for seq in (range(-5, 6), range(2**63, 2**63 + 3), range(-(2**64) + 1, -(2**64) + 3), [1.5, 2, True]):
        fast = _run(session, source, seq=seq, acc=1)["r"]
        slow = _run(session, source, fast=False, seq=seq, acc=1)["r"]
        assert fast == slow and [type(v) for v in fast] == [type(v) for v in slow]


@pytest.mark.parametrize(
    "source",
    [
        # a shadowed `range` returning huge ints: the flag is false, the usual test and the guard apply
        "def range(n):\n    return [2 ** 600] * n\nfor i in range(2):\n    x = i ** 8",
        # a range beyond ±2**64: the flag is false
        "for i in range(2 ** 600, 2 ** 600 + 1):\n    x = i ** 8",
        # a function rebinding the loop variable runs before the use: no flag for that statement
        "def f():\n    global i\n    i = 2 ** 600\nfor i in range(2):\n    f()\n    x = i ** 8",
    ],
)
def test_range_loop_flag_cannot_be_abused(source: str) -> None:
    # i ** 8 is proved within 4096 bits for |i| < 2**64 (so it runs natively under the flag); each payload
    # makes i a 601-bit int, whose 8th power is over the cap and must hit the guard.
    session = SandboxSession(Limits(**{**TEST_LIMITS, "max_int_bits": 4096}), seed=1)
    assert "_range_ok_" in _text("for i in range(2):\n    x = i ** 8", max_int_bits=4096)
    with pytest.raises(LimitExceeded):
        _run(session, source)
