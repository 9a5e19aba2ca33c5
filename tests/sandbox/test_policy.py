"""Compile-time policy: refusal messages, failing closed, caps on tree size, names the kernel may use."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlm_kernel.sandbox import Limits, SandboxError, SandboxSession, new_namespace, restrict_ast, run_source


def refuse(source: str, **kwargs) -> str:
    with pytest.raises(SandboxError) as info:
        restrict_ast(ast.parse(source), filename="<test>", **kwargs)
    return str(info.value)


def test_message_names_line_snippet_and_reason() -> None:
    reason = "attribute '__dict__' starts with '_': underscore attributes are not available in the sandbox"
    # Without the source in linecache the snippet is the offending expression...
    assert refuse("a = 1\nb = a.__dict__\n") == f"line 2: 'a.__dict__' — {reason}"
    # ...with it (IPython caches every cell), the whole line.
    import linecache

    source = "a = 1\nb = a.__dict__\n"
    linecache.cache["<cached>"] = (len(source), None, source.splitlines(True), "<cached>")
    with pytest.raises(SandboxError, match="^line 2: 'b = a.__dict__' — "):
        restrict_ast(ast.parse(source), filename="<cached>")


def test_message_counts_further_problems() -> None:
    assert refuse("a.__x\nb.__y\nc.__z").endswith("(and 2 more problems)")


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("async def f(): pass", "async/await is not available"),
        ("match x:\n    case 1: pass", "match statements are not available"),
        ("get_ipython()", "get_ipython() is not available"),
        ("open('x')", "no file access"),
        ("eval('1')", "eval() is not available"),
        ("exec('1')", "exec() is not available"),
        ("class A(metaclass=M): pass", "metaclass"),
        ("def f(_getattr_): pass", "starts with '_'"),
        ("class A:\n    def __getattr__(self, n): pass", "data-model methods"),
        ("x[1:2] += [3]", "augmented assignment to a slice"),
    ],
)
def test_refusal_reasons(source: str, reason: str) -> None:
    assert reason in refuse(source)


def test_fails_closed_on_internal_error() -> None:
    broken = ast.Module(
        body=[ast.Expr(ast.Attribute(value=ast.Name("x", ast.Load()), attr=None, ctx=ast.Load()))],
        type_ignores=[],
    )
    ast.fix_missing_locations(broken)
    with pytest.raises(SandboxError, match="could not check this cell"):
        restrict_ast(broken, filename="<test>")


def test_fails_closed_on_non_module() -> None:
    with pytest.raises(SandboxError):
        restrict_ast(ast.Expression(ast.Constant(1)), filename="<test>")  # type: ignore[arg-type]


def test_deep_nesting_is_refused_not_crashed() -> None:
    expr: ast.expr = ast.Constant(1)
    for _ in range(20_000):
        expr = ast.UnaryOp(ast.USub(), expr)
    tree = ast.Module(body=[ast.Expr(expr)], type_ignores=[])
    with pytest.raises(SandboxError, match="nested too deeply|could not check"):
        restrict_ast(tree, filename="<test>")


def test_syntax_tree_size_cap() -> None:
    source = "x = [" + "1," * 2000 + "]"
    message = refuse(source, limits=Limits(max_ast_nodes=1000))
    assert "RLM_MAX_AST_NODES" in message
    restrict_ast(ast.parse(source), filename="<test>", limits=Limits(max_ast_nodes=5000))


def test_source_size_cap() -> None:
    session = SandboxSession(Limits(max_source_bytes=100, memory_mb=0))
    outcome = run_source("x = 1\n" * 50, new_namespace(session), session)
    assert outcome.error is not None and "RLM_MAX_SOURCE_BYTES" in outcome.error


def test_refused_builtins_can_still_be_variable_names(session: SandboxSession) -> None:
    namespace = new_namespace(session)
    ok = run_source(
        "input = 'text'\nvars = [1]\ndef help(x):\n    return x\nprint(input, vars, help(2))",
        namespace,
        session,
    )
    assert ok.error is None and ok.stdout == "text [1] 2\n", ok
    assert "open" in refuse("open = 1\nopen")
    refused = run_source("x = vars\nx(1)", new_namespace(session), session)
    assert refused.error is not None and "vars() is only available for objects of classes" in refused.error
    refused = run_source("a = 1\nglobals()", new_namespace(session), session)
    assert (
        refused.error == "SandboxError: line 2: 'globals()' — globals() is not available: it would expose "
        "the sandbox guards"
    )


def test_repair_namespace_removes_only_shell_objects(session: SandboxSession) -> None:
    import builtins

    from rlm_kernel.sandbox import repair_namespace

    namespace = new_namespace(session)
    namespace.update(open=builtins.open, exit="my own value", __builtin__=builtins)
    namespace["__builtins__"] = builtins
    fixed = repair_namespace(namespace, session)
    assert set(fixed) == {"open", "__builtin__", "__builtins__"}
    assert namespace["exit"] == "my own value" and "open" not in namespace
    assert isinstance(namespace["__builtins__"], dict)


def test_trusted_names_and_history_names() -> None:
    refuse("_kernel_helper_('x')")
    restrict_ast(ast.parse("_kernel_helper_('x')"), filename="<t>", trusted_names={"_kernel_helper_"})
    for name in ("_", "__", "___", "_1", "_i", "_ii", "_i3"):
        restrict_ast(ast.parse(f"print({name})"), filename="<t>")
    refuse("_1 = 5")


def test_private_names_only_in_class_bodies_and_own_attributes() -> None:
    restrict_ast(
        ast.parse("class A:\n    _cache = {}\n    def _helper(self):\n        return self._x"), filename="<t>"
    )
    refuse("def _helper(): pass")
    refuse("_cache = {}")
    refuse("class A:\n    _print = 1")
    refuse("class A:\n    _tmp0 = 1")
    refuse("class A:\n    _getattr_ = 1")
    refuse("class A:\n    def f(self):\n        def _g(): pass")


def test_no_raw_attribute_access_survives() -> None:
    tree = restrict_ast(ast.parse("a.b.c\nx = y.z\nq.r = 1\ndel s.t\nf(*args).g"), filename="<t>")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            assert node.attr == "_call_print"


def test_except_handlers_and_finally_check_cancellation() -> None:
    tree = restrict_ast(ast.parse("try:\n    x = 1\nexcept:\n    pass\nfinally:\n    y = 2"), filename="<t>")
    text = ast.unparse(tree)
    assert text.count("_cancel_check_()") == 2


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="_abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12))
def test_computed_dunder_names_are_always_refused(body: str) -> None:
    session = SandboxSession(Limits(memory_mb=0))
    namespace = new_namespace(session)
    namespace["name"] = f"__{body}"
    outcome = run_source("getattr((1).real, name)", namespace, session)
    assert outcome.error is not None and outcome.error.startswith("SandboxError"), outcome


_ATTR = st.sampled_from(["real", "imag", "upper", "__class__", "__init__", "__globals__", "_x", "__dict__"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_ATTR, min_size=1, max_size=4), st.sampled_from(["format", "format_map", "userstring"]))
def test_format_field_walks_never_reach_underscore_attributes(chain: list[str], how: str) -> None:
    session = SandboxSession(Limits(memory_mb=0))
    namespace = new_namespace(session)
    field = "x." + ".".join(chain)
    namespace["template"] = "{" + field + "}"
    call = {
        "format": "template.format(x=1)",
        "format_map": "template.format_map({'x': 1})",
        "userstring": "import collections\ncollections.UserString(template).format(x=1)",
    }[how]
    outcome = run_source(call, namespace, session)
    first_private = next((i for i, part in enumerate(chain) if part.startswith("_")), None)
    if first_private is not None:
        assert outcome.error is not None and outcome.value_repr is None, outcome
        reachable = all(part in ("real", "imag") for part in chain[:first_private])
        if reachable:  # the walk got as far as the underscore name: the guard refused it
            assert outcome.error.startswith("SandboxError"), outcome
    else:
        assert outcome.error is None or "AttributeError" in outcome.error, outcome


def test_chain_in_a_class_body_comprehension_iterable_is_refused_not_misread(session: SandboxSession) -> None:
    """The first iterable of a comprehension in a class body runs in the class scope: the lambda the chain
    rewrite binds with there could not see the class's names (it read the global `hi`: `[]` instead of
    CPython's `[0, 1, 2]`), so such a chain is refused; chains elsewhere in class bodies still run."""
    head = "def f(v):\n    return v\nhi = 0\nclass A:\n    hi = 5\n"
    refused = refuse(head + "    r = [v for v in (range(3) if 0 < f(1) < hi else ())]\n")
    assert "separate comparisons" in refused
    namespace = new_namespace(session)
    ok = head + "    r = [v for v in range(4) if 0 < f(v) < 3]\n    s = 0 < f(1) < hi\nprint(A.r, A.s)"
    outcome = run_source(ok, namespace, session)
    assert outcome.error is None and outcome.stdout == "[1, 2] True\n"
