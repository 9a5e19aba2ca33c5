"""Magics in the rlm kernel: an allowlist, a registry other areas add to, and the `%rlm` command.

Cells reach magics as `get_ipython().run_line_magic(...)`; `rewrite_magics` turns allowed ones into
calls of hidden helpers (names no source can spell) and refuses the rest (`!cmd`, `%run`, `%pip`...).
"""

from __future__ import annotations

import ast
import shlex
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from rlm_kernel.sandbox.errors import SandboxError, format_refusal
from rlm_kernel.sandbox.guards import DENIED_TYPES
from rlm_kernel.sandbox.origin import refuse_in_model_code, require_direct_chain
from rlm_kernel.sandbox.policy import is_sandboxed_filename

__all__ = [
    "HIDDEN_CELL_MAGIC",
    "HIDDEN_LINE_MAGIC",
    "MagicSpec",
    "allowed_cell_magics",
    "allowed_line_magics",
    "make_magic_helpers",
    "refusal_reason",
    "register_cell_magic",
    "register_line_magic",
    "register_rlm_subcommand",
    "rewrite_magics",
    "rlm_subcommands",
]

# Names with a space: valid in an AST, impossible to write in source, so only the rewriter can call them.
HIDDEN_LINE_MAGIC = "rlm line magic"
HIDDEN_CELL_MAGIC = "rlm cell magic"


@dataclass(frozen=True)
class MagicSpec:
    """One allowed magic: `fn(line)` or `fn(line, cell)`; `ipython` means run IPython's own."""

    name: str
    fn: Callable[..., Any] | None
    doc: str = ""
    ipython: bool = False


# IPython's own magics that stay available. Their code bodies (%time, %timeit) go back through the shell's
# transform_ast, so they are restricted like any cell.
_line_magics: dict[str, MagicSpec] = {
    name: MagicSpec(name, None, doc, ipython=True)
    for name, doc in {
        "time": "time one statement or expression",
        "timeit": "time a statement over many runs",
        "who": "list your variables",
        "whos": "list your variables with types and values",
        "history": "show this session's input history",
        "pinfo": "obj? — help on an object",
        "pinfo2": "obj?? — help on an object, with source",
    }.items()
}
_cell_magics: dict[str, MagicSpec] = {
    "time": MagicSpec("time", None, "time a cell", ipython=True),
    "timeit": MagicSpec("timeit", None, "time a cell over many runs", ipython=True),
}
_rlm_subcommands: dict[str, MagicSpec] = {}

_SHELL = "shell commands are not available in the rlm kernel"
_FILES = "running, loading or writing files is not available in the rlm kernel"
_REFUSALS: tuple[tuple[str, str], ...] = (
    (
        "system sx sc bash sh script perl ruby python python2 python3 pypy cmd powershell killbgscripts "
        "alias unalias rehashx alias_magic",
        _SHELL,
    ),
    (
        "run load loadpy load_ext reload_ext unload_ext writefile save edit ed notebook logstart logon "
        "logoff logstop logstate macro recall rerun cd pwd ls dhist pushd popd dirs bookmark pycat less more "
        "cat mkdir rmdir rm cp mv man code_wrap autosave file",
        _FILES,
    ),
    ("env set_env", "environment variables are not available in the rlm kernel"),
    ("pip conda mamba micromamba uv", "installing packages is not available in the rlm kernel"),
    (
        "config xmode colors autocall automagic autoawait doctest_mode precision matplotlib pylab gui reset "
        "reset_selective xdel page pdef pdoc pfile psource psearch prun profile qtconsole connect_info clear",
        "this magic changes or reveals kernel internals and is not available in the rlm kernel",
    ),
    ("store", "%store writes variables to disk and is not available in the rlm kernel"),
    ("debug pdb tb", "the debugger is not available in the rlm kernel"),
    (
        "javascript js html svg latex markdown capture",
        "this cell magic is not available in the rlm kernel; use display() with rich objects instead",
    ),
)
_REFUSED: dict[str, str] = {name: reason for names, reason in _REFUSALS for name in names.split()}


def register_line_magic(name: str, fn: Callable[[str], Any], doc: str = "") -> None:
    """Allow `%name ...`: `fn(line)` returns an object to display, or None."""
    _check_name(name)
    _line_magics[name] = MagicSpec(name, fn, doc)


def register_cell_magic(name: str, fn: Callable[[str, str], Any], doc: str = "") -> None:
    """Allow `%%name ...`: `fn(line, cell)` gets the first line's rest and the body (text, not run)."""
    _check_name(name)
    _cell_magics[name] = MagicSpec(name, fn, doc)


def register_rlm_subcommand(name: str, fn: Callable[[str], Any], help: str = "") -> None:  # noqa: A002
    """Add `%rlm <name> ...`: `fn(rest_of_line)` returns an object to display, or None."""
    _check_name(name)
    _rlm_subcommands[name] = MagicSpec(name, fn, help)


def allowed_line_magics() -> dict[str, str]:
    """Line magic names available in cells, with their one-line docs."""
    return {n: s.doc for n, s in sorted(_line_magics.items()) if n not in ("pinfo", "pinfo2")}


def allowed_cell_magics() -> dict[str, str]:
    """Cell magic names available in cells, with their one-line docs."""
    return {n: s.doc for n, s in sorted(_cell_magics.items())}


def rlm_subcommands() -> dict[str, str]:
    """`%rlm` subcommands with their help."""
    return {n: s.doc for n, s in sorted(_rlm_subcommands.items())}


def refusal_reason(name: str, cell: bool = False) -> str:
    """Why the magic `name` is refused, and what is available instead."""
    if name in _REFUSED:
        return _REFUSED[name]
    prefix = "%%" if cell else "%"
    names = allowed_cell_magics() if cell else allowed_line_magics()
    available = ", ".join(prefix + n for n in names)
    return f"the magic {prefix}{name} is not available in the rlm kernel (available: {available})"


def _check_name(name: str) -> None:
    if not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"magic names must be identifiers without a leading underscore, got {name!r}")


def _rlm_command(line: str) -> Any:
    """`%rlm <subcommand> ...` — dispatch to the registered subcommands; `%rlm help` lists them."""
    refuse_in_model_code("%rlm")
    word, _, rest = line.strip().partition(" ")
    if word in ("", "help", "-h", "--help"):
        return _RlmHelp(rlm_subcommands())
    spec = _rlm_subcommands.get(word)
    if spec is None or spec.fn is None:
        known = ", ".join(rlm_subcommands()) or "none yet"
        raise UsageError(f"%rlm: unknown subcommand {word!r} (available: {known}; `%rlm help` explains each)")
    return spec.fn(rest.strip())


class _RlmHelp:
    """What `%rlm help` shows."""

    def __init__(self, commands: dict[str, str]) -> None:
        self.commands = commands

    def __repr__(self) -> str:
        lines = ["%rlm subcommands:"]
        lines += [f"  %rlm {name:<12} {doc}" for name, doc in self.commands.items()] or [
            "  (none registered)"
        ]
        lines.append("line magics: " + ", ".join("%" + n for n in allowed_line_magics()))
        lines.append("cell magics: " + ", ".join("%%" + n for n in allowed_cell_magics()))
        return "\n".join(lines)


register_line_magic("rlm", _rlm_command, "the rlm command: `%rlm help` lists its subcommands")


# -- compile time: rewrite allowlisted calls, refuse the rest --------------------------------------
def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_get_ipython_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "get_ipython"
        and not node.args
        and not node.keywords
    )


class _MagicRewriter(ast.NodeTransformer):
    def _refuse(self, node: ast.AST, snippet: str, reason: str) -> SandboxError:
        return SandboxError(format_refusal(getattr(node, "lineno", None), snippet, reason))

    def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802 - ast visitor protocol
        func = node.func
        if isinstance(func, ast.Attribute) and _is_get_ipython_call(func.value):
            return self._rewrite_shell_call(node, func.attr)
        self.generic_visit(node)
        return node

    def _rewrite_shell_call(self, node: ast.Call, method: str) -> ast.AST:
        args = [_const_str(a) for a in node.args]
        if method in ("system", "getoutput"):
            cmd = args[0] if args and args[0] is not None else "..."
            raise self._refuse(node, f"!{cmd}", _SHELL)
        if method == "run_line_magic" and len(args) == 2 and None not in args and not node.keywords:
            name, line = args
            snippet = _line_snippet(name, line)
            spec = _line_magics.get(name)
            if spec is None:
                raise self._refuse(node, snippet, refusal_reason(name))
            return self._helper_call(node, HIDDEN_LINE_MAGIC, [name, line])
        if method == "run_cell_magic" and len(args) == 3 and None not in args and not node.keywords:
            name, line, _cell = args
            snippet = f"%%{name} {line}".rstrip()
            if name not in _cell_magics:
                raise self._refuse(node, snippet, refusal_reason(name, cell=True))
            return self._helper_call(node, HIDDEN_CELL_MAGIC, args)
        raise self._refuse(node, f"get_ipython().{method}(...)", _ESCAPE_REASON)

    @staticmethod
    def _helper_call(node: ast.Call, helper: str, args: list[str]) -> ast.Call:
        new = ast.Call(
            func=ast.Name(id=helper, ctx=ast.Load()),
            args=[ast.Constant(value=a) for a in args],
            keywords=[],
        )
        return ast.copy_location(new, node)


_ESCAPE_REASON = "get_ipython() hands over the whole shell and is not available in the rlm kernel"


def _line_snippet(name: str, line: str) -> str:
    if name == "pinfo":
        return f"{line}?"
    if name == "pinfo2":
        return f"{line}??"
    return f"%{name} {line}".rstrip()


def rewrite_magics(tree: ast.Module) -> ast.Module:
    """Rewrite allowlisted magic calls to the hidden helpers; raise `SandboxError` for other shell calls.

    Bare names such as `get_ipython`, `exit`, `open` are refused by the sandbox policy that runs next.
    """
    return _MagicRewriter().visit(tree)


# -- run time: the hidden helpers ------------------------------------------------------------------
def _check_history_args(line: str) -> None:
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%history: {exc}") from None
    for word in words:
        if word.startswith("-") and "f" in word.lstrip("-") and not word.startswith("--"):
            raise SandboxError("%history -f writes a file and is not available in the rlm kernel")
        if word.startswith("--") and word != "--":
            raise UsageError(f"%history: long options such as {word} are not supported in the rlm kernel")


def _cell_caller(name: str) -> types.FrameType:
    """The frame that called a hidden helper, which must be a cell's own code calling it as magic syntax.

    Refuses model-written code, calls through kernel frames (a `functools.partial` driven by `*args`, a
    library callback) and arguments that are not exact `str` (a subclass could run code in the kernel).
    """
    refuse_in_model_code(f"the magic %{name}" if type(name) is str else "a magic")
    frame = sys._getframe(2)
    if not is_sandboxed_filename(frame.f_code.co_filename):
        raise SandboxError("magics run only as magic syntax (%name) written in a cell, never as a callable")
    # a person's function holding the magic runs it only when the person's code called it by name
    require_direct_chain(f"the magic %{name}", frame)
    return frame


def _exact_text(*values: Any) -> None:
    if any(type(v) is not str for v in values):
        raise SandboxError("magics run only as magic syntax (%name) written in a cell, never as a callable")


def _cell_locals(frame: types.FrameType) -> dict[str, Any]:
    """The calling cell frame's variables for %time/%timeit: public names only, kernel objects refused."""
    if frame.f_locals is frame.f_globals:
        return frame.f_globals  # a cell's top level: its own namespace, where `%time x = 1` assigns
    local_ns = {}
    for key, value in frame.f_locals.items():
        if type(key) is str and not key.startswith("_") and type(value) not in DENIED_TYPES:
            local_ns[key] = value
    return local_ns


def make_magic_helpers(shell: Any) -> dict[str, Callable[..., Any]]:
    """The hidden helpers the rewritten cells call, bound to `shell` by closure.

    The kernel keeps them out of the cell's namespace (they live in its private builtins table, under
    names no source can spell), and each refuses any caller but a cell's own code (`_cell_caller`).
    """

    def line_magic(name: str, line: str) -> Any:
        frame = _cell_caller(name)
        _exact_text(name, line)
        spec = _line_magics.get(name)
        if spec is None:  # defence in depth: only the rewriter calls this, with allowlisted names
            raise SandboxError(refusal_reason(name))
        if not spec.ipython:
            return spec.fn(line) if spec.fn is not None else None
        if name == "history":
            _check_history_args(line)
        if name in ("pinfo", "pinfo2") and "*" in line:
            raise SandboxError(f"{line!r} — wildcard search (%psearch) is not available in the rlm kernel")
        fn = shell.find_line_magic(name)
        kwargs = {}
        if getattr(fn, "needs_local_scope", False):
            kwargs["local_ns"] = _cell_locals(frame)
        del frame
        with shell.builtin_trap:
            return fn(line, **kwargs)

    def cell_magic(name: str, line: str, cell: str) -> Any:
        frame = _cell_caller(name)
        _exact_text(name, line, cell)
        spec = _cell_magics.get(name)
        if spec is None:
            raise SandboxError(refusal_reason(name, cell=True))
        if not spec.ipython:
            return spec.fn(line, cell) if spec.fn is not None else None
        fn = shell.find_cell_magic(name)
        kwargs = {}
        if getattr(fn, "needs_local_scope", False):
            kwargs["local_ns"] = _cell_locals(frame)
        del frame
        with shell.builtin_trap:
            return fn(line, cell, **kwargs)

    return {HIDDEN_LINE_MAGIC: line_magic, HIDDEN_CELL_MAGIC: cell_magic}
