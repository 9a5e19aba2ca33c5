"""Tools: what a run exposes to its root and sub-RLMs (`rlm_run(tools=..., sub_tools=...)`, `%%rlm --tools`).

A tool is, as in the reference library's `custom_tools`, one of
- a plain function defined in a notebook cell, so its body is sandboxed code like every cell: the root
  calls it from its blocks, under the same policy and limits;
- a callable object: an instance of a class defined in a notebook cell whose `__call__` is such a function;
- a value: plain data (str, numbers, lists, dicts, ... — copied into the run, as `rlm_run` copies options).
An entry may be `(tool, "description")`, as the reference allows. The system prompt lists each tool with a
signature and docstring read from the function's code object (no cell code runs to describe it), or a value's
type and size. `sub_tools=` (the reference's `custom_sub_tools`) sets what sub-RLMs get instead (default:
the same tools; `{}` for none). Names the REPL reserves (`llm_query`, `FINAL`, `context`, …) and builtins
are refused with a clear error.
"""

from __future__ import annotations

import builtins
import inspect
import keyword
import sys
import types

from rlm_kernel.repl.names import CONTEXT_NAMES, HELPER_NAMES
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


def _call_function(obj: object) -> types.FunctionType | None:
    """The notebook function that calling `obj` runs (its class's `__call__`), or None; looked up without
    running any of the object's code."""
    try:
        call = inspect.getattr_static(type(obj), "__call__", None)
    except Exception:  # noqa: BLE001 - a class whose lookup fails is not a tool
        return None
    return call if _is_notebook_function(call) else None


def _entry(name: str, entry: object) -> tuple[object, str | None]:
    """(the tool, its description or None) from one dict entry; ToolError for what cannot be a tool."""
    from rlm_kernel.sandbox.coerce import CoercionError, plain_data

    description = None
    if type(entry) is tuple and len(entry) == 2 and type(entry[1]) is str:
        entry, description = entry
    if _is_notebook_function(entry) or _call_function(entry) is not None:
        return entry, description
    if callable(entry):
        raise ToolError(_not_function(entry, name))
    try:
        plain_data(entry, f"tool {name!r}")  # checked here; copied into each run's namespace (`install`)
        return entry, description
    except CoercionError as err:
        raise ToolError(
            f"tools: {name!r} must be a notebook function, a callable object of a class defined in the "
            f"notebook, or plain data (str, numbers, lists, dicts): {err}"
        ) from None


def check_tools(value: object, reserved: frozenset[str] | set[str] = frozenset()) -> tuple:
    """`value` (a dict name → tool, or a list of functions) as ((name, tool, description or None), ...), or
    ToolError."""
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
    out: dict[str, tuple[object, str | None]] = {}
    for name, fn in pairs:
        name = _check_name(name, reserved)
        if name in out:
            raise ToolError(f"tools: the name {name!r} is given twice")
        out[name] = _entry(name, fn)
    return tuple((name, tool, doc) for name, (tool, doc) in out.items())


def _not_function(fn: object, name: str | None = None) -> str:
    what = f"tool {name!r}" if name else "a tool"
    kind = type(fn).__name__ if type(type(fn)) is type else "object"
    return (
        f"tools: {what} must be a function defined with `def` or `lambda` in a notebook cell, got {kind} "
        "(helpers, builtins and module functions cannot be tools; wrap one in a def if you need it; a "
        "callable object must be of a class defined in the notebook, a value plain data)"
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


def _describe_value(value: object) -> str:
    kind = type(value).__name__
    try:
        size = f", len {len(value):,}"  # type: ignore[arg-type]
    except TypeError:
        size = ""
    return f"a {kind} value{size}"


def describe(tools: tuple) -> str:
    """The system prompt's section listing the tools."""
    lines = ["Tools (functions and values from the notebook you can use in your ```repl blocks):"]
    for name, tool, description in tools:
        if type(tool) is types.FunctionType:  # check_tools let only notebook functions through
            doc = description or _doc(tool)
            lines.append(f"- `{signature(name, tool)}`\n    " + doc.replace("\n", "\n    "))
        elif (call := _call_function(tool)) is not None:
            head = signature(name, call).replace("(self, ", "(", 1).replace("(self)", "()", 1)
            doc = description or _doc(call)
            lines.append(f"- `{head}`\n    " + doc.replace("\n", "\n    "))
        else:
            text = f"- `{name}`: {_describe_value(tool)}"
            lines.append(text + (f"\n    {description}" if description else ""))
    return "\n".join(lines)


def refuse_clobbering(ns: dict, tools: tuple) -> None:
    """A `--shared` run binds the tools into the notebook's namespace: refuse one that would replace another
    notebook variable."""
    for name, fn, _ in tools:
        if name in ns and ns[name] is not fn:
            raise ToolError(
                f"tools: the notebook already has a variable {name!r}; a --shared run would replace it "
                "— give the tool another name"
            )


def install(ns: dict, protected: dict | None, tools: tuple) -> None:
    """Bind the tools into a run's namespace (and into `protected`, so a block that rebinds one is undone);
    a value is copied unless the run is `--shared` (`protected` None: the notebook's own namespace)."""
    from rlm_kernel.sandbox.coerce import plain_data

    for name, fn, _ in tools:
        if protected is not None and not callable(fn):
            fn = plain_data(fn, f"tool {name!r}")  # a run's own copy: its blocks cannot change the notebook's
        ns[name] = fn
        if protected is not None:
            protected[name] = fn
