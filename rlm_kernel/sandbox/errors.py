"""Errors raised by the sandbox: policy refusals, size caps and the sticky cell time limit.

All carry text only (no live objects); `SandboxError` is also IPython's `InputRejected` (clean refusal).
"""

from __future__ import annotations

import linecache
import sys

from IPython.core.error import InputRejected

from rlm_kernel.errors import RLMError
from rlm_kernel.sandbox.filenames import is_sandboxed_filename
from rlm_kernel.sandbox.names import ALWAYS_REFUSED

__all__ = [
    "CellTimeout",
    "LimitExceeded",
    "ModuleNotAvailable",
    "SandboxAttributeError",
    "SandboxError",
    "SandboxTypeError",
    "add_name_suggestion",
    "format_refusal",
    "refusal",
]


class SandboxError(RLMError, InputRejected):
    """A cell (or an operation inside it) was refused by the sandbox policy.

    The message reads ``line N: '<snippet>' — <reason>`` when the line is known, else just the reason.
    """


class ModuleNotAvailable(SandboxError, ImportError):
    """`import x` for a module outside the allowlist; an ImportError, so `except ImportError:` works.

    Shown as `SandboxError` like every other refusal (one name for users and tools to recognise).
    """


class SandboxTypeError(SandboxError, TypeError):
    """A refusal of something plain Python refuses with a TypeError too (`t[0] = 1` on a tuple), so
    `except TypeError:` behaves as in Python. Shown as `SandboxError`."""


class SandboxAttributeError(SandboxError, AttributeError):
    """A refusal of something plain Python refuses with an AttributeError too (`(1).x = 2`), so
    `except AttributeError:` behaves as in Python. Shown as `SandboxError`."""


ModuleNotAvailable.__name__ = ModuleNotAvailable.__qualname__ = "SandboxError"
SandboxTypeError.__name__ = SandboxTypeError.__qualname__ = "SandboxError"
SandboxAttributeError.__name__ = SandboxAttributeError.__qualname__ = "SandboxError"


class LimitExceeded(RLMError):
    """An operation would exceed a size limit (range length, exponent, repetition, format width, output)."""


class CellTimeout(BaseException):  # noqa: N818 - named like KeyboardInterrupt, which it resembles
    """The cell ran past its CPU or wall-time limit.

    Derives from BaseException (like KeyboardInterrupt) so `except Exception` does not catch it, and the
    sandbox re-raises it from every handler and guard until the cell ends, so `except:` cannot swallow it.
    """


def format_refusal(lineno: int | None, snippet: str | None, reason: str) -> str:
    """Build the one-line refusal text ``line N: '<snippet>' — <reason>``."""
    if lineno is None:
        return reason
    snippet = (snippet or "").strip()
    if len(snippet) > 60:
        snippet = snippet[:57] + "..."
    if snippet:
        return f"line {lineno}: {snippet!r} — {reason}"
    return f"line {lineno}: {reason}"


def _caller_line(filenames: tuple[str, ...] | None = None) -> tuple[int | None, str | None]:
    """Find the innermost frame running restricted user code (its filename is registered as sandboxed)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if is_sandboxed_filename(name):
            lineno = frame.f_lineno
            return lineno, linecache.getline(name, lineno) or None
        frame = frame.f_back
    return None, None


def refusal(reason: str, kind: type[SandboxError] = SandboxError) -> SandboxError:
    """A run-time `SandboxError` pointing at the user's line that triggered it (when it can be found)."""
    lineno, snippet = _caller_line()
    return kind(format_refusal(lineno, snippet, reason))


# -- "Did you mean …" for NameError (CPython 3.11 computes it only in its own exception printer) -----------
_MOVE_COST = 2  # CPython's Python/suggestions.c: insert/delete/substitute cost 2, a change of case 1
_CASE_COST = 1
_MAX_CANDIDATES = 750
_MAX_NAME = 40


def _distance(a: str, b: str, limit: int) -> int:
    """CPython's weighted Levenshtein distance (more than `limit` once it cannot stay within it)."""
    if a == b:
        return 0
    previous = [i * _MOVE_COST for i in range(len(b) + 1)]
    for i, ca in enumerate(a, 1):
        row = [i * _MOVE_COST]
        for j, cb in enumerate(b, 1):
            if ca == cb:
                sub = 0
            elif ca.lower() == cb.lower():
                sub = _CASE_COST
            else:
                sub = _MOVE_COST
            row.append(min(previous[j] + _MOVE_COST, row[j - 1] + _MOVE_COST, previous[j - 1] + sub))
        if min(row) > limit:
            return limit + 1
        previous = row
    return previous[-1]


def suggest_name(wrong: str, candidates: list[str]) -> str | None:
    """The closest of `candidates` to the misspelled `wrong`, by CPython's rule; None if none is close."""
    if len(candidates) > _MAX_CANDIDATES or len(wrong) > _MAX_NAME:
        return None
    best, best_distance = None, len(wrong)
    for name in candidates:
        if name == wrong:
            continue
        limit = min((len(name) + len(wrong) + 3) * _MOVE_COST // 6, best_distance - 1)
        distance = _distance(wrong, name, limit)
        if distance <= limit:
            best, best_distance = name, distance
    return best


def add_name_suggestion(exc: BaseException) -> None:
    """Append ". Did you mean: 'x'?" to a NameError from a cell, as plain Python does.

    Candidates are the names visible where the error happened (the innermost cell frame of the traceback):
    its locals, the cell's namespace and the sandbox's builtins — never hidden names (starting with '_', such
    as the guards) or names the kernel keeps that are not identifiers."""
    if type(exc) not in (NameError, UnboundLocalError):
        return
    wrong = getattr(exc, "name", None)
    if type(wrong) is not str or len(exc.args) != 1 or type(exc.args[0]) is not str:
        return
    message = exc.args[0]
    if "Did you mean" in message:
        return
    tb = exc.__traceback__
    if tb is None:
        return
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    if not is_sandboxed_filename(frame.f_code.co_filename):
        return  # raised in library code: its names are not the cell's
    names: dict[str, None] = {}
    for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
        for key in list(scope):
            if type(key) is str and key[:1] != "_" and key.isidentifier() and key not in ALWAYS_REFUSED:
                names[key] = None
    suggestion = suggest_name(wrong, list(names))
    if suggestion is not None:
        exc.args = (f"{message}. Did you mean: {suggestion!r}?",)
