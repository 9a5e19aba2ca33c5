"""A text-only copy of a cell's exception chain, which IPython renders in place of the cell's own objects.

IPython's traceback calls str() on each exception of the chain and on its notes in kernel frames, after the
cell's own are gone: there the time limit cannot stop a C repr (`raise ValueError(t)`, `t` a tuple nested with
sharing, is 2**40 visits of `tuple.__repr__` in one call). The copy's messages and notes are computed first by
`sandbox.error_text` (which the limit stops); IPython then reads only text, shown as it would show the cell's.
"""

from __future__ import annotations

from typing import Any

from rlm_kernel.sandbox.error_text import message, note_texts

__all__ = ["plain_syntax_error", "text_copy", "timeout_copy"]

_MAX_COPIED = 64  # exceptions of one chain copied (cell_errors.cut_chain has cut it to MAX_CHAIN already)


def _shown(self: BaseException) -> str:
    return self.args[0] if self.args else ""


def _copy_type(kind: type) -> type:
    """A class named like `kind` (same name, qualified name and module, so IPython prints it alike) whose
    str is the text it was made with. Never a SyntaxError (IPython would re-read the cell's own exception)."""
    base = Exception if issubclass(kind, Exception) else BaseException
    module = kind.__module__
    attrs = {
        "__str__": _shown,
        "__module__": module if type(module) is str else "builtins",
        "__qualname__": kind.__qualname__,
    }
    return type(kind.__name__, (base,), attrs)


def _copy_one(exc: BaseException) -> BaseException:
    copy = _copy_type(type(exc))(message(exc))
    notes = note_texts(exc)
    if notes is not None:
        copy.__notes__ = notes
    copy.__traceback__ = exc.__traceback__
    return copy


def text_copy(value: BaseException) -> BaseException:
    """A copy of the chain IPython shows from `value` (each exception's `__cause__`, else its `__context__`
    unless suppressed): the same class names, messages, notes and tracebacks, as text. CellTimeout propagates
    when the cell's limit stops a message."""
    copies: dict[int, BaseException] = {}
    exc: BaseException | None = value
    previous: tuple[BaseException, bool] | None = None
    while exc is not None and len(copies) < _MAX_COPIED:
        known = copies.get(id(exc))
        copy = known if known is not None else _copy_one(exc)
        if previous is not None:
            earlier, by_cause = previous
            if by_cause:
                earlier.__cause__ = copy
            else:
                earlier.__context__ = copy
        if known is not None:
            break  # a cycle: IPython stops at an exception it has shown
        copies[id(exc)] = copy
        by_cause = exc.__cause__ is not None
        copy.__suppress_context__ = exc.__suppress_context__
        following = exc.__cause__ if by_cause else (None if exc.__suppress_context__ else exc.__context__)
        previous = (copy, by_cause)
        exc = following
    return copies[id(value)]


def timeout_copy(stopped: BaseException) -> BaseException:
    """What is shown when the limit stopped the rendering of a cell's error: the CellTimeout, as text."""
    return _copy_type(type(stopped))(str(stopped))


def plain_syntax_error(value: Any) -> bool:
    """True for a SyntaxError whose fields are exact str and int (what the compiler makes): IPython may show
    it itself. One a cell raised with other values (`raise SyntaxError(t)`) is copied as text instead."""
    fields = (value.msg, value.filename, value.text, value.lineno, value.offset)
    kinds = (str, str, str, int, int)
    exact = all(f is None or type(f) is k for f, k in zip(fields, kinds, strict=True))
    return exact and type(value.msg) is str
