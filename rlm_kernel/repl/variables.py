"""The namespace helpers: `SHOW_VARS` (the variables a cell or the model created), `repl_set`, `repl_get`."""

from __future__ import annotations

import inspect
import keyword

from rlm_kernel.repl.errors import ReplError
from rlm_kernel.repl.names import CONTEXT_NAMES, HELPER_NAMES
from rlm_kernel.repl.state import ReplState
from rlm_kernel.repl.translate import translated

__all__ = ["SHOW_VARS", "emit", "repl_get", "repl_set"]


def emit(state: ReplState, text: str) -> None:
    """Print where the running code's output goes (the root loop's capture, or the cell)."""
    write = getattr(state.session, "write_output", None)
    if callable(write):
        write(text + "\n")
    else:
        print(text)


def SHOW_VARS(state: ReplState, ns: dict) -> str:  # noqa: N802 - the RLM reference name
    """Print the variables you created, with their type and size (helpers, context and the reference-style
    `answer` dict excluded); returns the same text (shown once: as the last expression of a cell or under
    `print(SHOW_VARS())` it is not shown again)."""
    hidden = set(HELPER_NAMES) | set(CONTEXT_NAMES) | set(state.protected) | {"final_answer"}
    rows = []
    for name, value in ns.items():
        if (
            name.startswith("_")
            or not name.isidentifier()
            or name in hidden
            or name in state.hidden
            or inspect.ismodule(value)
            or (name == "answer" and type(value) is dict and set(value) == {"content", "ready"})
        ):
            continue
        try:
            size = f"len {len(value):,}"
        except Exception:  # noqa: BLE001 - objects without a length
            size = ""
        rows.append(f"{name:<24} {type(value).__name__:<16} {size}")
    text = "\n".join(rows) if rows else "(no variables yet)"
    emit(state, text)
    return state.mark_shown(text)  # type: ignore[return-value]


def repl_set(state: ReplState, ns: dict, name: str, value: object) -> None:
    """Set variable `name` to `value` in this namespace: repl_set(name, value)."""
    with translated(state, "repl_set", error=ReplError, model_call=False):
        if type(name) is not str:
            raise ReplError(f"repl_set: the name must be a str, got {type(name).__name__}")
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise ReplError(f"repl_set: {name!r} is not a usable variable name")
        if name in HELPER_NAMES or name in CONTEXT_NAMES or name in state.protected:
            raise ReplError(f"repl_set: {name!r} is a preloaded name and cannot be replaced")
        ns[name] = value


def repl_get(state: ReplState, ns: dict, name: str, default: object = None) -> object:
    """Return variable `name` from this namespace, or `default`: repl_get(name, default=None)."""
    if type(name) is not str or name.startswith("_") or not name.isidentifier():
        return default  # exact str only: a subclass's methods must not decide what is read
    return ns.get(name, default)
