"""Unit tests of the magic allowlist: rewriting, refusal messages and the registration API (no kernel).

The kernel-level behaviour of the same rules is in test_escapes.py.
"""

from __future__ import annotations

import ast

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from rlm_kernel import magics
from rlm_kernel.sandbox.errors import SandboxError
from rlm_kernel.sandbox.policy import register_sandboxed_filename

_transform = TransformerManager().transform_cell


def rewrite(cell: str) -> ast.Module:
    return magics.rewrite_magics(ast.parse(_transform(cell)))


def helper_calls(tree: ast.Module) -> list[tuple[str, list[str]]]:
    return [
        (node.func.id, [a.value for a in node.args])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and " " in node.func.id
    ]


def test_allowed_line_and_cell_magics_become_hidden_helper_calls() -> None:
    assert helper_calls(rewrite("%time x = 1")) == [(magics.HIDDEN_LINE_MAGIC, ["time", "x = 1"])]
    assert helper_calls(rewrite("%%time\nx = 1\n")) == [(magics.HIDDEN_CELL_MAGIC, ["time", "", "x = 1\n"])]
    assert helper_calls(rewrite("len?")) == [(magics.HIDDEN_LINE_MAGIC, ["pinfo", "len"])]
    assert helper_calls(rewrite("a = 1\n%who\n")) == [(magics.HIDDEN_LINE_MAGIC, ["who", ""])]


def test_hidden_helper_names_cannot_be_written_in_source() -> None:
    for name in (magics.HIDDEN_LINE_MAGIC, magics.HIDDEN_CELL_MAGIC):
        assert not name.isidentifier()
        with pytest.raises(SyntaxError):
            ast.parse(f"{name}('time', '1')")


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("!ls", "line 1: '!ls' — shell commands are not available in the rlm kernel"),
        ("a = 1\nb = 2\n!ls", "line 3: '!ls' — shell commands are not available in the rlm kernel"),
        (
            "%run x.py",
            "line 1: '%run x.py' — running, loading or writing files is not available in the rlm kernel",
        ),
        (
            "%pip install x",
            "line 1: '%pip install x' — installing packages is not available in the rlm kernel",
        ),
        ("%%bash\nls", "line 1: '%%bash' — shell commands are not available in the rlm kernel"),
        ("%env", "line 1: '%env' — environment variables are not available in the rlm kernel"),
    ],
)
def test_refusals_are_one_line_with_line_numbers(cell: str, message: str) -> None:
    with pytest.raises(SandboxError) as info:
        rewrite(cell)
    assert str(info.value) == message


def test_unknown_magic_lists_what_is_available() -> None:
    with pytest.raises(SandboxError) as info:
        rewrite("%frobnicate 1")
    text = str(info.value)
    assert "%frobnicate" in text and "%time" in text and "%rlm" in text


def from_cell(helper: object, *args: str) -> object:
    """Call a hidden helper the way a rewritten cell does: from code compiled under a sandboxed filename."""
    register_sandboxed_filename("<magics-unit-cell>")
    code = compile("helper(*args)", "<magics-unit-cell>", "eval")
    return eval(code, {"helper": helper, "args": args})  # noqa: S307 - test code


def test_registered_magics_join_the_allowlist() -> None:
    seen: list[tuple] = []
    magics.register_line_magic("unit_probe", lambda line: seen.append(("line", line)) or "L", "probe")
    magics.register_cell_magic(
        "unit_probe_cell", lambda line, cell: seen.append(("cell", line, cell)), "probe"
    )
    magics.register_rlm_subcommand("unit_probe", lambda rest: f"sub:{rest}", "probe subcommand")
    assert "unit_probe" in magics.allowed_line_magics()
    assert "unit_probe_cell" in magics.allowed_cell_magics()
    assert helper_calls(rewrite("%unit_probe a b")) == [(magics.HIDDEN_LINE_MAGIC, ["unit_probe", "a b"])]
    helpers = magics.make_magic_helpers(shell=None)
    assert from_cell(helpers[magics.HIDDEN_LINE_MAGIC], "unit_probe", "a b") == "L"
    from_cell(helpers[magics.HIDDEN_CELL_MAGIC], "unit_probe_cell", "x", "body\n")
    assert seen == [("line", "a b"), ("cell", "x", "body\n")]
    assert from_cell(helpers[magics.HIDDEN_LINE_MAGIC], "rlm", "unit_probe  hello ") == "sub:hello"
    assert "unit_probe" in repr(from_cell(helpers[magics.HIDDEN_LINE_MAGIC], "rlm", "help"))


def test_register_rejects_private_names() -> None:
    with pytest.raises(ValueError):
        magics.register_line_magic("_secret", lambda line: None)
    with pytest.raises(ValueError):
        magics.register_rlm_subcommand("two words", lambda rest: None)


def test_helpers_refuse_names_not_on_the_allowlist() -> None:
    helpers = magics.make_magic_helpers(shell=None)
    with pytest.raises(SandboxError):
        from_cell(helpers[magics.HIDDEN_LINE_MAGIC], "run", "x.py")
    with pytest.raises(SandboxError):
        from_cell(helpers[magics.HIDDEN_CELL_MAGIC], "bash", "", "ls")


def test_helpers_refuse_callers_other_than_cell_code() -> None:
    """Called from kernel (non-cell) code, with non-str arguments, or while model code runs: refused."""
    from rlm_kernel.sandbox.origin import model_code

    helpers = magics.make_magic_helpers(shell=None)
    line = helpers[magics.HIDDEN_LINE_MAGIC]
    with pytest.raises(SandboxError, match="magic syntax"):
        line("rlm", "help")  # this test's frame is not a cell's
    with pytest.raises(SandboxError, match="magic syntax"):
        from_cell(line, "rlm", type("S", (str,), {})("help"))
    with model_code(), pytest.raises(SandboxError, match="model-written code"):
        from_cell(line, "rlm", "help")
