"""Reading one text file into a `str` without holding a second copy of it.

ASCII files are read straight into a freshly allocated `str`; other files are decoded from an `mmap`.
"""

from __future__ import annotations

import codecs
import ctypes
import mmap
import os
import sys
from pathlib import Path

__all__ = ["DecodeRefused", "read_text"]

BIG_FILE = 8 * 1024 * 1024
"""Files at least this large take the no-copy paths; smaller ones are read and decoded plainly."""

_CHUNK = 16 * 1024 * 1024
_UTF8 = {"utf-8", "utf8", "utf_8", "utf-8-sig", "ascii", "us-ascii"}


class DecodeRefused(ValueError):
    """The bytes are not text in the requested encoding (message says where and what to do)."""


def _ascii_str_factory():
    """Return `new(n) -> (str, writable memoryview of its n bytes)` or None if this Python is unsuitable.

    CPython's compact ASCII strings keep their bytes right after the object header (`sys.getsizeof('') - 1`
    bytes), which is where C code fills a string made by `PyUnicode_New` before anyone else sees it.
    """
    if sys.implementation.name != "cpython":
        return None
    try:
        new_unicode = ctypes.pythonapi.PyUnicode_New
        new_unicode.argtypes = [ctypes.c_ssize_t, ctypes.c_uint32]
        new_unicode.restype = ctypes.py_object
    except AttributeError:
        return None
    offset = sys.getsizeof("") - 1

    def new(n: int) -> tuple[str, memoryview]:
        if n < 2:
            raise ValueError("only for non-trivial sizes")
        s = new_unicode(n, 127)
        buf = (ctypes.c_char * n).from_address(id(s) + offset)
        return s, memoryview(buf).cast("B")

    try:  # self-check once: the layout assumption must hold exactly
        probe, view = new(5)
        view[:] = b"hello"
        if probe != "hello" or hash(probe) != hash("hello") or len(probe) != 5:
            return None
    except Exception:  # noqa: BLE001 - any surprise means: do not use this path
        return None
    return new


_new_ascii = _ascii_str_factory()


def _describe_bad_bytes(path: Path, err: UnicodeDecodeError, encoding: str) -> DecodeRefused:
    return DecodeRefused(
        f"{path} is not valid {encoding} text (byte {err.start}: {err.reason}). "
        f"Pass the file's encoding, e.g. load_context(path, encoding='latin-1'), "
        f"or errors='replace' to substitute undecodable bytes."
    )


def _read_ascii_in_place(path: Path, size: int) -> str | None:
    """Read an ASCII file directly into a new str; None if it is not ASCII or changed while reading."""
    if _new_ascii is None:
        return None
    text, view = _new_ascii(size)
    with open(path, "rb", buffering=0) as f:
        got = 0
        while got < size:
            n = f.readinto(view[got:])
            if not n:
                break
            got += n
        if got != size or f.read(1):
            return None  # the file changed size while we read it
    for start in range(0, size, _CHUNK):
        if not view[start : start + _CHUNK].tobytes().isascii():
            return None  # not ASCII: the half-made string is dropped unseen
    view.release()
    return text


def _decode_mapped(path: Path, size: int, encoding: str, errors: str) -> str:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mm:
        if hasattr(mm, "madvise"):
            mm.madvise(mmap.MADV_SEQUENTIAL)
        skip = (
            3
            if encoding.replace("_", "-") in {"utf-8", "utf8", "utf-8-sig"} and mm[:3] == codecs.BOM_UTF8
            else 0
        )
        with memoryview(mm) as view, view[skip:] as body:
            return codecs.decode(body, "utf-8" if skip else encoding, errors)


def read_text(path: Path, *, encoding: str = "utf-8", errors: str = "strict") -> str:
    """Return the text of `path`. Large files never exist twice in this process's own memory.

    Raises `DecodeRefused` when the bytes are not valid in `encoding` (with `errors='strict'`).
    """
    size = os.stat(path).st_size
    enc = encoding.lower()
    try:
        if size < BIG_FILE:
            data = path.read_bytes()
            if enc.replace("_", "-") in {"utf-8", "utf8"} and data.startswith(codecs.BOM_UTF8):
                data = data[3:]
            return data.decode(encoding, errors)
        if enc in _UTF8 and enc != "utf-8-sig":
            text = _read_ascii_in_place(path, size)
            if text is not None:
                return text
        return _decode_mapped(path, size, encoding, errors)
    except UnicodeDecodeError as err:
        raise _describe_bad_bytes(path, err, encoding) from None
    except LookupError:
        raise DecodeRefused(
            f"unknown encoding {encoding!r}; use a Python codec name such as 'latin-1'"
        ) from None
