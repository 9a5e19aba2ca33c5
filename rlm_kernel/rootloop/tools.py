"""Tools: notebook functions a run exposes to its root and sub-RLMs (`rlm_run(tools=...)`, `%%rlm --tools`).

A tool is a plain function defined in a notebook cell, so its body is sandboxed code like every cell: the
root calls it from its blocks, under the same policy and limits. The system prompt lists each tool with a
signature and docstring read from the function's code object (no cell code runs to describe it). Names the
REPL reserves (`llm_query`, `FINAL`, `context`, …) and builtins are refused with a clear error.
"""

from __future__ import annotations

import builtins
import inspect
import keyword
import sys
import types

from rlm_kernel.repl.helpers import CONTEXT_NAMES, HELPER_NAMES
from rlm_kernel.repl.preload import ANALYSIS_NAMES

__all__ = ["RESERVED", "ToolError", "check_tools", "describe", "install", "refuse_clobbering", "signature"]

RESERVED = frozenset(
    (*HELPER_NAMES, *CONTEXT_NAMES, *ANALYSIS_NAMES) + ("answer", "history", "rlm_result", "final_answer")
)  # what every run's namespace already binds (a tool cannot replace it)
_DOC_CHARS = 600
_MAX_TOOLS = 50


class ToolError(ValueError):
    """A `tools=` value the run cannot use; the message says why and what to pass."""


def _is_notebook_function(fn: object) -> bool:
    from rlm_kernel.sandbox import is_sandboxed_filename

    if type(fn) is not types.FunctionType:
        return False
    filename = types.FunctionType.__dict__["__code__"].__get__(fn).co_filename
    return type(filename) is str and is_sandboxed_filename(filename)


def _check_name(name: object, reserved: frozenset[str] | set[str]) -> str:
    if type(name) is not str or not name.isidentifier() or keyword.iskeyword(name):
        raise ToolError(f"tools: {name!r} is not a usable function name")
    if name.startswith("_"):
        raise ToolError(f"tools: {name!r} starts with an underscore; name the tool without one")
    if name in RESERVED or name in reserved:
        raise ToolError(
            f"tools: {name!r} is a name the REPL reserves (its helpers, FINAL, context, answer); "
            "give the tool another name, e.g. tools={'my_" + name.lower() + "': fn}"
        )
    if hasattr(builtins, name):
        raise ToolError(f"tools: {name!r} is a Python builtin; give the tool another name")
    return name


def check_tools(value: object, reserved: frozenset[str] | set[str] = frozenset()) -> tuple:
    """`value` (a dict name → function, or a list of functions) as ((name, function), ...), or ToolError."""
    if type(value) is dict:
        pairs = list(value.items())
    elif type(value) is list or type(value) is tuple:
        pairs = []
        for fn in value:
            if not _is_notebook_function(fn):
                raise ToolError(_not_function(fn))
            pairs.append((types.FunctionType.__dict__["__name__"].__get__(fn), fn))
    else:
        raise ToolError(
            "tools must be a dict {name: function} or a list of functions defined in the notebook"
        )
    if len(pairs) > _MAX_TOOLS:
        raise ToolError(f"tools: at most {_MAX_TOOLS} tools per run, got {len(pairs)}")
    out: dict[str, object] = {}
    for name, fn in pairs:
        name = _check_name(name, reserved)
        if not _is_notebook_function(fn):
            raise ToolError(_not_function(fn, name))
        if name in out:
            raise ToolError(f"tools: the name {name!r} is given twice")
        out[name] = fn
    return tuple(out.items())


def _not_function(fn: object, name: str | None = None) -> str:
    what = f"tool {name!r}" if name else "a tool"
    kind = type(fn).__name__ if type(type(fn)) is type else "object"
    return (
        f"tools: {what} must be a function defined with `def` or `lambda` in a notebook cell, got {kind} "
        "(helpers, builtins and module functions cannot be tools; wrap one in a def if you need it)"
    )


def _annotation(value: object) -> str | None:
    if type(value) is str:
        return value
    if type(value) is type:
        return type.__dict__["__name__"].__get__(value)
    if type(value) is types.GenericAlias:
        from rlm_kernel.rootloop.answer_types import describe

        return describe(value)
    return None


def _default(value: object) -> str:
    if value is None or type(value) is bool or type(value) is int or type(value) is float:
        return repr(value)
    if type(value) is str:
        return repr(value if len(value) <= 40 else value[:40] + "…")
    return "…"


def signature(name: str, fn: types.FunctionType) -> str:
    """`name(a: int, b='x', *args, key=None, **kw) -> str`, from the code object, defaults and annotations."""
    get = types.FunctionType.__dict__
    code = get["__code__"].__get__(fn)
    defaults = get["__defaults__"].__get__(fn) or ()
    kwdefaults = get["__kwdefaults__"].__get__(fn) or {}
    # before 3.14 annotations are evaluated when the def runs; from 3.14 reading them runs the cell's
    # annotation code (PEP 649), so they are left out there rather than evaluated here
    annotations = get["__annotations__"].__get__(fn) if sys.version_info < (3, 14) else {}
    annotations = annotations if type(annotations) is dict else {}
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    varargs = bool(code.co_flags & inspect.CO_VARARGS)
    varkw = bool(code.co_flags & inspect.CO_VARKEYWORDS)

    def param(n: str, default: object = inspect.Parameter.empty) -> str:
        ann = _annotation(annotations.get(n)) if n in annotations else None
        text = n + (f": {ann}" if ann else "")
        if default is not inspect.Parameter.empty:
            text += (" = " if ann else "=") + _default(default)
        return text

    parts = []
    first_default = npos - len(defaults)
    for i, n in enumerate(names[:npos]):
        parts.append(param(n, defaults[i - first_default] if i >= first_default else inspect.Parameter.empty))
    rest = npos + nkw
    if varargs:
        parts.append("*" + names[rest])
    elif nkw:
        parts.append("*")
    for n in names[npos : npos + nkw]:
        default = (
            kwdefaults.get(n, inspect.Parameter.empty)
            if type(kwdefaults) is dict
            else inspect.Parameter.empty
        )
        parts.append(param(n, default))
    if varkw:
        parts.append("**" + names[rest + varargs])
    returns = _annotation(annotations.get("return")) if "return" in annotations else None
    return f"{name}({', '.join(parts)})" + (f" -> {returns}" if returns else "")


def _doc(fn: types.FunctionType) -> str:
    doc = types.FunctionType.__dict__["__doc__"].__get__(fn)
    if type(doc) is not str or not doc.strip():
        return "(no docstring)"
    text = inspect.cleandoc(doc)
    return text if len(text) <= _DOC_CHARS else text[:_DOC_CHARS] + "…"


def describe(tools: tuple) -> str:
    """The system prompt's section listing the tools."""
    lines = ["Tools (functions from the notebook you can call in your ```repl blocks):"]
    for name, fn in tools:
        doc = _doc(fn).replace("\n", "\n    ")
        lines.append(f"- `{signature(name, fn)}`\n    {doc}")
    return "\n".join(lines)


def refuse_clobbering(ns: dict, tools: tuple) -> None:
    """A `--shared` run binds the tools into the notebook's namespace: refuse one that would replace another
    notebook variable."""
    for name, fn in tools:
        if name in ns and ns[name] is not fn:
            raise ToolError(
                f"tools: the notebook already has a variable {name!r}; a --shared run would replace it "
                "— give the tool another name"
            )


def install(ns: dict, protected: dict | None, tools: tuple) -> None:
    """Bind the tools into a run's namespace (and into `protected`, so a block that rebinds one is undone)."""
    for name, fn in tools:
        ns[name] = fn
        if protected is not None:
            protected[name] = fn
