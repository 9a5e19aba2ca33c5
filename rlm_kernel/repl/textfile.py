"""Reading one text file into a `str` without holding a second copy of it.

Large files go straight into a freshly allocated `str` (ASCII: read in place; other text: decoded twice).
"""

from __future__ import annotations

import codecs
import ctypes
import mmap
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

__all__ = ["BIG_FILE", "DecodeRefused", "assemble", "read_text"]

BIG_FILE = 8 * 1024 * 1024
"""Files at least this large take the no-copy paths; smaller ones are read and decoded plainly."""

_CHUNK = 4 * 1024 * 1024
_UTF8 = {"utf-8", "utf8", "utf_8", "u8", "utf"}
_MAXCHAR = {0: 0x7F, 1: 0xFF, 2: 0xFFFF, 4: 0x10FFFF}
_CODEC = {
    0: ("ascii", "strict"),
    1: ("latin-1", "strict"),
    2: ("utf-16-le", "surrogatepass"),
    4: ("utf-32-le", "surrogatepass"),
}


class DecodeRefused(ValueError):
    """The bytes are not text in the requested encoding (message says where and what to do)."""


def _str_factory() -> tuple[Callable[[int, int], tuple[str, memoryview]], Callable[[str], int]] | None:
    """Return (new, kind) or None where CPython's string layout is not the one assumed.

    `new(n, kind)` makes a str of n code points of `kind` (0 = ASCII, 1, 2 or 4 bytes each) with
    `PyUnicode_New` and returns a writable view of its n*kind data bytes, which C code fills the same way
    before anyone else sees the string. `kind(s)` is the storage kind of an existing str. Compact strings
    keep their data right after the header: `sys.getsizeof('') - 1` bytes (ASCII) or `sys.getsizeof('é') - 2`.
    """
    if sys.implementation.name != "cpython":
        return None
    try:
        new_unicode = ctypes.pythonapi.PyUnicode_New
        new_unicode.argtypes = [ctypes.c_ssize_t, ctypes.c_uint32]
        new_unicode.restype = ctypes.py_object
    except AttributeError:
        return None
    ascii_header = sys.getsizeof("") - 1
    compact_header = sys.getsizeof("é") - 2

    def new(n: int, kind: int) -> tuple[str, memoryview]:
        if n < 2:
            raise ValueError("only for non-trivial sizes")
        s = new_unicode(n, _MAXCHAR[kind])
        width = max(kind, 1)
        buf = (ctypes.c_char * (n * width)).from_address(id(s) + (compact_header if kind else ascii_header))
        return s, memoryview(buf).cast("B")

    def kind_of(s: str) -> int:
        if s.isascii():
            return 0
        return (sys.getsizeof(s) - compact_header) // (len(s) + 1)

    try:  # self-check once per kind: the layout assumptions must hold exactly
        for sample in ("hello", "héllo", "hĀllo", "h\U00010000llo"):
            kind = kind_of(sample)
            made, view = new(len(sample), kind)
            view[:] = sample.encode(*_CODEC[kind])
            view.release()
            if (
                made != sample
                or hash(made) != hash(sample)
                or kind_of(made) != kind
                or len(made) != len(sample)
            ):
                return None
    except Exception:  # noqa: BLE001 - any surprise means: do not use the in-place paths
        return None
    return new, kind_of


_factory = _str_factory()


def _refusal(path: Path, position: int, reason: str, encoding: str) -> DecodeRefused:
    return DecodeRefused(
        f"{path} is not valid {encoding} text (byte {position}: {reason}). "
        f"Pass the file's encoding, e.g. load_context(path, encoding='latin-1'), "
        f"or errors='replace' to substitute undecodable bytes."
    )


def _read_ascii_in_place(path: Path, size: int) -> str | None:
    """Read an ASCII file directly into a new str; None if it is not ASCII or changed while reading."""
    if _factory is None:
        return None
    text, view = _factory[0](size, 0)
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


def _decoded_chunks(path: Path, encoding: str, errors: str) -> Iterator[str]:
    """The file's text, decoded incrementally in chunks; a UTF-8 BOM is dropped."""
    codec = "utf-8-sig" if encoding in _UTF8 else encoding
    decoder = codecs.getincrementaldecoder(codec)(errors)
    buf = bytearray(_CHUNK)
    offset = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            pending = len(decoder.getstate()[0])
            try:
                with memoryview(buf) as view, view[:n] as part:
                    text = decoder.decode(part, final=not n)
            except UnicodeDecodeError as err:
                raise _refusal(path, offset - pending + err.start, err.reason, encoding) from None
            if text:
                yield text
            if not n:
                return
            offset += n


def assemble(parts: Callable[[], Iterable[str]]) -> str | None:
    """Concatenate the strs `parts()` yields without holding them and the result at once.

    `parts` is called twice: to measure (length and widest character), then to write each piece into the
    final str. Returns None where the in-place path is unavailable or the pieces changed between the calls.
    """
    if _factory is None:
        return None
    new, kind_of = _factory
    total, kind = 0, 0
    for piece in parts():
        total += len(piece)
        kind = max(kind, kind_of(piece))
    if total < 2:
        return None
    text, view = new(total, kind)
    width, (codec, codec_errors) = max(kind, 1), _CODEC[kind]
    pos = 0
    for piece in parts():
        data = piece.encode(codec, codec_errors)
        if pos + len(data) > len(view) or kind_of(piece) > kind:
            return None  # the pieces changed between the passes: the half-made string is dropped unseen
        view[pos : pos + len(data)] = data
        pos += len(data)
    view.release()
    return text if pos == total * width else None


def _decode_in_place(path: Path, encoding: str, errors: str) -> str | None:
    """Decode twice: count the code points and find the widest, then write each chunk into the final str."""
    return assemble(lambda: _decoded_chunks(path, encoding, errors))


def _decode_mapped(path: Path, size: int, encoding: str, errors: str) -> str:
    codec = "utf-8-sig" if encoding in _UTF8 else encoding
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mm:
        if hasattr(mm, "madvise"):
            mm.madvise(mmap.MADV_SEQUENTIAL)
        with memoryview(mm) as view:
            return codecs.decode(view, codec, errors)


def read_text(path: Path, *, encoding: str = "utf-8", errors: str = "strict") -> str:
    """Return the text of `path`. Large files never exist twice in this process's memory.

    Raises `DecodeRefused` when the bytes are not valid in `encoding` (with `errors='strict'`).
    """
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise DecodeRefused(
            f"unknown encoding {encoding!r}; use a Python codec name such as 'latin-1'"
        ) from None
    enc = "utf-8" if encoding.lower().replace("_", "-") in _UTF8 else encoding
    size = os.stat(path).st_size
    try:
        if size < BIG_FILE:
            data = path.read_bytes()
            return data.decode("utf-8-sig" if enc == "utf-8" else enc, errors)
        if enc in ("utf-8", "ascii", "us-ascii"):
            text = _read_ascii_in_place(path, size)
            if text is not None:
                return text
        text = _decode_in_place(path, enc, errors)
        if text is not None:
            return text
        return _decode_mapped(path, size, enc, errors)  # only where the in-place path is unavailable
    except UnicodeDecodeError as err:
        raise _refusal(path, err.start, err.reason, encoding) from None
