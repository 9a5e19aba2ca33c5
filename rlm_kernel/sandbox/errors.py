"""Errors raised by the sandbox: policy refusals, size caps and the sticky cell time limit.

All carry text only (no live objects); `SandboxError` is also IPython's `InputRejected` (clean refusal).
"""

from __future__ import annotations

import linecache
import sys

from IPython.core.error import InputRejected

from rlm_kernel.errors import RLMError

__all__ = ["CellTimeout", "LimitExceeded", "ModuleNotAvailable", "SandboxError", "format_refusal", "refusal"]


class SandboxError(RLMError, InputRejected):
    """A cell (or an operation inside it) was refused by the sandbox policy.

    The message reads ``line N: '<snippet>' — <reason>`` when the line is known, else just the reason.
    """


class ModuleNotAvailable(SandboxError, ImportError):
    """`import x` for a module outside the allowlist; an ImportError, so `except ImportError:` works.

    Shown as `SandboxError` like every other refusal (one name for users and tools to recognise).
    """


ModuleNotAvailable.__name__ = ModuleNotAvailable.__qualname__ = "SandboxError"


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
    from rlm_kernel.sandbox.policy import is_sandboxed_filename

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
