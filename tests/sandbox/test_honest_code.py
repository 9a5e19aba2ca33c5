"""Honest code the policy used to refuse: what each new allowance permits, and what it still refuses.

The controls and attacks that are plain cells live in payloads.py (run in-process and through a real kernel);
these tests pin the details a payload cannot express.
"""

from __future__ import annotations

import ast

import pytest

from rlm_kernel.sandbox import SandboxError, SandboxSession, new_namespace, restrict_ast, run_source
from rlm_kernel.sandbox.errors import (
    SandboxAttributeError,
    SandboxTypeError,
    add_name_suggestion,
    suggest_name,
)


def run(session: SandboxSession, source: str, namespace: dict | None = None):
    return run_source(source, namespace if namespace is not None else new_namespace(session), session)


def name_error(session: SandboxSession, source: str) -> str:
    """The NameError message the kernel shows for `source` (run_source reports it without suggestions, so
    the root loop's recorded prompts stay as they were; the kernel's tracebacks add them)."""
    ns = new_namespace(session)
    tree = restrict_ast(ast.parse(source), filename="<suggest-test>", limits=session.limits)
    with pytest.raises(NameError) as info:
        exec(compile(tree, "<suggest-test>", "exec"), ns)  # noqa: S102 - restricted code under test
    add_name_suggestion(info.value)
    return str(info.value)


# -- errors keep Python's types ------------------------------------------------------------------------------
def test_typed_refusals_are_sandbox_errors_and_builtin_errors() -> None:
    assert issubclass(SandboxTypeError, SandboxError) and issubclass(SandboxTypeError, TypeError)
    assert issubclass(SandboxAttributeError, SandboxError)
    assert issubclass(SandboxAttributeError, AttributeError)
    assert SandboxTypeError.__name__ == SandboxAttributeError.__name__ == "SandboxError"


@pytest.mark.parametrize(
    ("source", "caught_by"),
    [
        ("t = (1,)\nt[0] = 2", "TypeError"),
        ("t = (1,)\ndel t[0]", "TypeError"),
        ("s = 'ab'\ns[0] = 'x'", "TypeError"),
        ("(1).x = 2", "AttributeError"),
        ("del (1).real", "AttributeError"),
        ("setattr(5, 'x', 1)", "AttributeError"),
        ("delattr(5, 'x')", "AttributeError"),
        ("setattr(int, 'x', 1)", "TypeError"),
        ("str.x = 1", "TypeError"),
        ("len.x = 1", "AttributeError"),
        ("frozenset().x = 1", "AttributeError"),
        ("vars(5)", "TypeError"),
    ],
)
def test_write_refusals_are_caught_like_python(session: SandboxSession, source: str, caught_by: str) -> None:
    # Plain Python raises the same type for each line (checked here too, outside the sandbox).
    with pytest.raises(eval(caught_by)):  # noqa: S307 - a builtin exception name from the table above
        exec(source, {})  # noqa: S102 - the same line in plain Python
    cell = f"try:\n{_indent(source)}\nexcept {caught_by}:\n    print('caught')"
    outcome = run(session, cell)
    assert outcome.error is None and outcome.stdout == "caught\n", outcome


@pytest.mark.parametrize(
    "source",
    [
        "import json\njson.dumps = 1",
        "import decimal\nd = decimal.Decimal(1)\nd.__class__",
        "import collections\ncollections.abc.Mapping.x = 1",
        "import fractions\nfractions.Fraction.x = 1",
    ],
)
def test_refusals_of_what_python_allows_are_not_builtin_errors(session: SandboxSession, source: str) -> None:
    cell = f"try:\n{_indent(source)}\nexcept (TypeError, AttributeError):\n    print('caught')"
    outcome = run(session, cell)
    assert outcome.error is not None and outcome.error.startswith("SandboxError"), outcome


def _indent(source: str) -> str:
    return "\n".join("    " + line for line in source.splitlines())


# -- name mangling -------------------------------------------------------------------------------------------
def test_mangling_matches_python() -> None:
    source = (
        "class Acc:\n    __n = 1\n    def __f(self):\n        self.__x = 1\n"
        "        return lambda: self.__x\n"
        "    class Inner:\n        def g(self):\n            return self.__y\n"
    )
    text = ast.unparse(restrict_ast(ast.parse(source), filename="<test>"))
    for mangled in ("_Acc__n", "_Acc__f", "'_Acc__x'", "'_Inner__y'"):
        assert mangled in text, text
    assert "__x" not in text.replace("_Acc__x", "")


def test_mangled_private_attributes_stay_private_to_own_objects(session: SandboxSession) -> None:
    ns = new_namespace(session)
    assert run(session, "class C:\n    def __init__(self):\n        self.__x = 1", ns).error is None
    # Mangled names are ordinary private names: readable on your own objects, from anywhere (like `_cache`)...
    assert run(session, "C()._C__x", ns).value_repr == "1"
    # ...never on library objects, even through a class with the library class's name.
    outcome = run(session, "class list:\n    def peek(self, o):\n        return o.__x\nlist().peek([])", ns)
    assert outcome.error is not None and outcome.error.startswith("SandboxError"), outcome


# -- "did you mean" ------------------------------------------------------------------------------------------
def test_suggestion_follows_cpython_rules() -> None:
    assert suggest_name("valu", ["value", "other"]) == "value"
    assert suggest_name("Value", ["value"]) == "value"  # a change of case is cheap
    assert suggest_name("xyz", ["value"]) is None
    assert suggest_name("a", [f"n{i}" for i in range(751)]) is None  # too many candidates, as in CPython


@pytest.mark.parametrize("wrong", ["getattr_", "write_", "write_attr", "mark_class", "rlm_sandbox_builtins"])
def test_suggestion_never_names_hidden_names(session: SandboxSession, wrong: str) -> None:
    message = name_error(session, wrong)
    assert "'_" not in message, message


def test_suggestion_names_the_cells_own_names_and_builtins(session: SandboxSession) -> None:
    assert name_error(session, "total_count = 1\ntotal_cont").endswith("Did you mean: 'total_count'?")
    assert name_error(session, "lenn([])").endswith("Did you mean: 'len'?")


def test_suggestion_uses_function_locals(session: SandboxSession) -> None:
    message = name_error(session, "def f():\n    counter = 1\n    return countr\nf()")
    assert message.endswith("Did you mean: 'counter'?"), message


def test_user_raised_name_error_is_left_alone(session: SandboxSession) -> None:
    assert name_error(session, "value = 1\nraise NameError('valu is odd')") == "valu is odd"


# -- decimal contexts ----------------------------------------------------------------------------------------
def test_local_context_never_leaks_into_the_kernel(session: SandboxSession) -> None:
    import decimal

    before = decimal.getcontext()
    prec = before.prec
    cell = "import decimal\nwith decimal.localcontext() as c:\n    c.prec = 7\n    raise ValueError"
    outcome = run(session, cell)
    assert outcome.error is not None and "ValueError" in outcome.error
    assert decimal.getcontext() is before and before.prec == prec
