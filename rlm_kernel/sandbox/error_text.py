"""The text of a cell's exception — its message and its notes — computed where the cell's time limit stops it.

`str(exc)` of a cell's exception is one C call into the values it holds: `raise ValueError(t)` with `t` a
tuple nested with sharing (`t = (t, t)` forty times) is 2**40 visits of `tuple.__repr__`. C's str() and repr()
check for signals at each value they visit, but the cell's timers raise only on a stack holding the cell's own
code, and the kernel formats an error after the cell's frames are gone. Here the rendering runs in a function
the timers treat as the cell's code (`limits.interruptible`): the limit stops it with CellTimeout, which
propagates to the caller. An ordinary message is exactly `str(exc)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlm_kernel.sandbox.errors import CellTimeout
from rlm_kernel.sandbox.limits import interruptible

__all__ = ["STR_FAILED", "exact_text", "message", "note_texts", "text_of"]

STR_FAILED = "<exception str() failed>"  # what Python's traceback shows when str(exc) raises


def _rendered(fn: Callable[[Any], Any], value: Any) -> Any:
    return fn(value)  # the cell's timers may stop this frame (and the C call it makes)


interruptible(_rendered)


def exact_text(text: str) -> str:
    """`text` as an exact str (a str subclass a cell's `__str__` returned is copied without its methods)."""
    return text if type(text) is str else str.__getitem__(text, slice(None))


def message(exc: BaseException) -> str:
    """`str(exc)`, as Python's traceback shows it (`STR_FAILED` when it raises); CellTimeout when the cell's
    limit stops it (and KeyboardInterrupt) propagate."""
    try:
        return exact_text(_rendered(str, exc))
    except (CellTimeout, KeyboardInterrupt):
        raise
    except BaseException:  # noqa: BLE001 - any failure of a cell's __str__ (MemoryError included)
        return STR_FAILED


def text_of(value: Any, failed: str = STR_FAILED) -> str:
    """`str(value)` of a value a cell's exception holds, stopped by the cell's limit (CellTimeout propagates);
    `failed` when it raises."""
    if type(value) is str:
        return value
    try:
        return exact_text(_rendered(str, value))
    except (CellTimeout, KeyboardInterrupt):
        raise
    except BaseException:  # noqa: BLE001 - any failure of a cell's __str__
        return failed


def note_texts(exc: BaseException) -> list[str] | None:
    """The exception's `__notes__` as exact str (each by `str()`, as Python's traceback shows them), or
    None when it has none; a value that is not a list or tuple is shown by its repr, as Python does."""
    try:
        notes = BaseException.__getattribute__(exc, "__notes__")
    except AttributeError:
        return None
    if not isinstance(notes, (list, tuple)):
        try:
            return [exact_text(_rendered(repr, notes))]
        except (CellTimeout, KeyboardInterrupt):
            raise
        except BaseException:  # noqa: BLE001
            return ["<__notes__ repr() failed>"]
    texts = []
    for note in list(notes):
        if type(note) is str:
            texts.append(note)
            continue
        try:
            texts.append(exact_text(_rendered(str, note)))
        except (CellTimeout, KeyboardInterrupt):
            raise
        except BaseException:  # noqa: BLE001
            texts.append("<note str() failed>")
    return texts
