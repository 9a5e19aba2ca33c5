"""The registry of sandboxed filenames: which code objects are restricted user code (cells, blocks, lambdas).

`restrict_ast` registers the filename each checked cell is compiled under; tracebacks, the time-out signal
handlers, the audit hook and the guards ask `is_sandboxed_filename` whose frame they look at. Process-wide on
purpose, like the code objects and `linecache` it describes: a filename is registered only after the policy
checked the code, and never removed (a function defined in an old cell is still restricted code).
"""

from __future__ import annotations

__all__ = ["is_sandboxed_filename", "register_sandboxed_filename"]

_SANDBOXED_FILES: set[str] = set()


def register_sandboxed_filename(filename: str) -> None:
    """Record that code compiled under `filename` is restricted user code (for tracebacks and timers)."""
    _SANDBOXED_FILES.add(filename)


def is_sandboxed_filename(filename: str) -> bool:
    """True if `filename` names restricted user code."""
    return filename in _SANDBOXED_FILES
