"""The sandbox's named units on their own, without a cell: the value check, the write refusal, the fast-path
prover, the facade type and the name rules (each module of rlm_kernel/sandbox can be tested by itself)."""

from __future__ import annotations

import ast
import functools
import sys
import types

import pytest

from rlm_kernel.sandbox.errors import SandboxAttributeError, SandboxError, SandboxTypeError
from rlm_kernel.sandbox.facade import Facade, Refused, make_facade
from rlm_kernel.sandbox.fastpath import RANGE_BITS, fast_plan, fast_test, harmless_binop
from rlm_kernel.sandbox.filenames import is_sandboxed_filename, register_sandboxed_filename
from rlm_kernel.sandbox.guards import special_partial
from rlm_kernel.sandbox.handout import ValueCheck
from rlm_kernel.sandbox.names import ALWAYS_REFUSED, REFUSED_NAMES
from rlm_kernel.sandbox.writes import refused_write


def test_value_check_refuses_what_leads_out() -> None:
    check = ValueCheck()
    assert check(3, "x") == 3 and check([1], "x") == [1]
    for value in (sys, sys._getframe(), (lambda: 0).__code__):
        with pytest.raises(SandboxError, match="attribute 'a' leads to a"):
            check(value, "attribute 'a'")


def test_refused_write_answers_as_python_would() -> None:
    with pytest.raises(SandboxTypeError, match="does not support item assignment"):
        refused_write((1, 2), attribute=False)
    with pytest.raises(SandboxAttributeError, match="no attributes that can be set"):
        refused_write(1, attribute=True)
    with pytest.raises(SandboxTypeError, match="built-in type 'int'"):
        refused_write(int, attribute=True)
    with pytest.raises(SandboxError, match="modules are read-only"):
        refused_write(make_facade("m", {}), attribute=True)
    register_sandboxed_filename("<units cell>")
    own = types.FunctionType(compile("def f(): pass", "<units cell>", "exec").co_consts[0], {})
    assert is_sandboxed_filename("<units cell>") and refused_write(own, attribute=True) is own


def test_special_attribute_of_partial_is_refused() -> None:
    with pytest.raises(SandboxError, match="functools.partial's .func"):
        special_partial(functools.partial(print), "func")


def _expr(source: str) -> ast.BinOp:
    node = ast.parse(source, mode="eval").body
    assert isinstance(node, ast.BinOp)
    return node


def test_fast_plan_proves_sizes_or_declines() -> None:
    # x * y: both names need a magnitude test (64-bit operands cannot reach a 2-million-bit cap)
    assert fast_plan(_expr("x * y"), 2_000_000, 100_000) == [("x", 64), ("y", 64)]
    assert fast_plan(_expr("x * y"), 100, 100_000) == [("x", 16), ("y", 16)]  # 64 + 64 bits could pass 100
    assert fast_plan(_expr("x * y"), 20, 100_000) is None  # even 16 + 16 bits could pass a 20-bit cap
    assert fast_plan(_expr("x + y"), 2_000_000, 100_000) is None  # nothing guarded: no fast path needed
    assert fast_plan(_expr("x ** y"), 2_000_000, 100_000) is None  # an exponent that is not a literal
    proven = fast_plan(_expr("i * 3 % n"), 2_000_000, 100_000, proven={"i": RANGE_BITS})
    assert proven is not None and "i" not in dict(proven)
    assert harmless_binop(_expr("'%s items' % n"), 100_000) and not harmless_binop(
        _expr("'%*d' % n"), 100_000
    )
    assert not harmless_binop(_expr("'%d items' % n"), 100_000)  # %d: int() of a Decimal is checked
    test = ast.unparse(fast_test([("x", 64), ("y", 0)]))
    assert "_type_(x) is _int_" in test and "_type_(y) is _float_" in test and str(1 << 64) in test


def test_facades_are_built_only_by_the_kernel() -> None:
    facade = make_facade("m", {"a": 1, "gone": Refused("is left out on purpose"), "s": {1}})
    assert facade.a == 1 and type(facade.s) is frozenset and dir(facade) == ["a", "s"]
    with pytest.raises(SandboxError, match="m.gone is left out on purpose"):
        _ = facade.gone
    with pytest.raises(SandboxError, match="facades cannot be created from a cell"):
        Facade("m", {})
    with pytest.raises(SandboxError, match="read-only"):
        facade.a = 2


def test_every_always_refused_name_has_a_reason() -> None:
    assert ALWAYS_REFUSED <= set(REFUSED_NAMES)


def test_caps_check_sizes_with_nothing_but_the_limits() -> None:
    from rlm_kernel.sandbox.caps import Caps
    from rlm_kernel.sandbox.errors import LimitExceeded
    from rlm_kernel.sandbox.limits import Limits

    caps = Caps(Limits(max_int_bits=100, max_sequence=1000, max_format_width=50))
    assert caps.mul(2**40, 2**40) == 2**80 and caps.mul("ab", 3) == "ababab"
    with pytest.raises(LimitExceeded, match="RLM_MAX_INT_BITS"):
        caps.mul(2**60, 2**60)
    with pytest.raises(LimitExceeded, match="RLM_MAX_SEQUENCE"):
        caps.inplace["*="]([0], 1001)
    with pytest.raises(LimitExceeded, match="RLM_MAX_FORMAT_WIDTH"):
        caps.mod("%*d", (99, 1))
    with pytest.raises(LimitExceeded, match="RLM_MAX_INT_BITS"):
        caps.from_bytes(int)(b"\xff" * 13)
    assert Caps(Limits(max_int_bits=0)).pow(2, 10_000) == 2**10_000  # 0 disables the cap


def test_a_value_shown_by_a_helper_is_not_shown_again_in_that_session_only() -> None:
    from rlm_kernel.sandbox import Limits, SandboxSession, new_namespace, run_source

    session, other = (SandboxSession(Limits(memory_mb=0), seed=1) for _ in range(2))
    ns = new_namespace(session)
    ns["show"] = session.shown.mark  # what SHOW_VARS/FINAL_VAR do: print it, mark it, return it
    assert run_source("x = [1]\nshow(x)", ns, session).value_repr is None
    assert run_source("x", ns, session).value_repr == "[1]"  # the mark was used up
    value = ["elsewhere"]
    other.shown.mark(value)
    assert not session.shown.consume(value) and other.shown.consume(value)
