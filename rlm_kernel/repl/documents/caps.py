"""The caps a corpus file is parsed under (expanded size, pages, members, line length, time) and the error
that says which one a file exceeded."""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Caps", "FileSkipped", "deadline"]


class FileSkipped(Exception):  # noqa: N818 - a reason to skip a file, not a failure of the load
    """A file was not loaded: its message is the reason shown in the load summary (text only)."""


def _env(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default
    return value if value > 0 else default


@dataclass(frozen=True)
class Caps:
    """Per-file limits for parsed formats (settable at kernel start through the environment)."""

    expanded_mb: float = 256  # RLM_CORPUS_MAX_EXPANDED_MB: text or decompressed bytes one file may yield
    pages: int = 5000  # RLM_CORPUS_MAX_PAGES: PDF pages (and EPUB chapters) per file
    members: int = 10000  # RLM_CORPUS_MAX_MEMBERS: members of an archive, messages of a mbox
    line_chars: int = 1_000_000  # RLM_CORPUS_MAX_LINE_CHARS: one extracted line (a record, a paragraph)
    seconds: float = 30.0  # RLM_CORPUS_FILE_SECONDS: CPU time to parse one file
    depth: int = 2  # archives inside archives

    @classmethod
    def from_env(cls) -> Caps:
        return cls(
            expanded_mb=_env("RLM_CORPUS_MAX_EXPANDED_MB", cls.expanded_mb),
            pages=int(_env("RLM_CORPUS_MAX_PAGES", cls.pages)),
            members=int(_env("RLM_CORPUS_MAX_MEMBERS", cls.members)),
            line_chars=int(_env("RLM_CORPUS_MAX_LINE_CHARS", cls.line_chars)),
            seconds=_env("RLM_CORPUS_FILE_SECONDS", cls.seconds),
        )

    @property
    def expanded_bytes(self) -> int:
        return int(self.expanded_mb * 1024 * 1024)

    def check_text(self, text: str, what: str) -> None:
        """Refuse extracted text over the expanded-size cap or with a line over the line cap."""
        if len(text) > self.expanded_bytes:
            raise FileSkipped(
                f"{what} expands to over {self.expanded_mb:g} MB of text (RLM_CORPUS_MAX_EXPANDED_MB)"
            )
        if len(text) > self.line_chars:
            start = 0
            while start < len(text):
                end = text.find("\n", start)
                end = len(text) if end < 0 else end
                if end - start > self.line_chars:
                    raise FileSkipped(
                        f"a line of {end - start:,} chars, over the {self.line_chars:,} cap "
                        "(RLM_CORPUS_MAX_LINE_CHARS)"
                    )
                start = end + 1


class _Expired(BaseException):
    """Raised into the parsing thread when its time is up (a BaseException: parsers' `except Exception`
    must not swallow it)."""


_WALL_FACTOR = 10  # a parse waiting on something (not using CPU) still ends after this many times the limit
_POLL = 0.05


@contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Stop the code inside after `seconds` of this thread's CPU time (or `_WALL_FACTOR` times that of wall
    time) with `FileSkipped`: a watchdog thread raises into this thread at its next bytecode. CPU time, not
    wall time, so a busy machine does not skip an ordinary file. C code (lxml, zlib, pyarrow) is stopped
    when it returns; its input is bounded by the size caps beforehand."""
    target = threading.get_ident()
    clock = time.pthread_getcpuclockid(target)
    done = threading.Event()
    fired = [False]
    cpu_start, wall_start = time.clock_gettime(clock), time.monotonic()

    def over() -> bool:
        cpu = time.clock_gettime(clock) - cpu_start
        return cpu >= seconds or time.monotonic() - wall_start >= seconds * _WALL_FACTOR

    def watch() -> None:
        while not done.wait(min(_POLL, seconds)):
            if fired[0] or over():
                fired[0] = True  # raise again while it runs: the first may land where it is swallowed
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(_Expired))

    watcher = threading.Thread(target=watch, name="rlm-corpus-deadline", daemon=True)
    watcher.start()
    message = f"parsing {what} took over {seconds:g} s of CPU (RLM_CORPUS_FILE_SECONDS)"
    try:
        try:
            yield
        finally:
            done.set()
            watcher.join()
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), None)
    except _Expired:
        raise FileSkipped(message) from None
    if fired[0]:
        raise FileSkipped(message)
