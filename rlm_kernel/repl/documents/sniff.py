"""Which format a file is: by its first bytes (PDF, zip-based DOCX/EPUB, gzip, tar, Parquet), then by its
extension, then text or binary."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

__all__ = ["FORMATS", "TEXT_FORMATS", "sniff"]

TEXT_FORMATS = frozenset({"text", "csv", "tsv", "jsonl"})
"""Read with the load's encoding as they are (only their record positions are added)."""
FORMATS = (
    frozenset({"pdf", "html", "docx", "epub", "ipynb", "eml", "mbox", "json", "parquet", "zip", "tar", "gz"})
    | TEXT_FORMATS
)
_EXTENSIONS = {
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".docx": "docx",
    ".epub": "epub",
    ".ipynb": "ipynb",
    ".eml": "eml",
    ".mbox": "mbox",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".zip": "zip",
    ".tar": "tar",
    ".tgz": "tar",
    ".gz": "gz",
}


def _zip_kind(data: bytes | Path) -> str:
    """docx, epub or zip, from the central directory and at most 40 bytes of the `mimetype` member."""
    try:
        with zipfile.ZipFile(str(data) if isinstance(data, Path) else io.BytesIO(data)) as zf:
            names = set(zf.namelist()[:2000])
            if "word/document.xml" in names:
                return "docx"
            if "mimetype" in names:
                with zf.open("mimetype") as f:
                    if f.read(40).strip() == b"application/epub+zip":
                        return "epub"
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError, NotImplementedError):
        pass
    return "zip"


def sniff(name: str, head: bytes, whole: bytes | Path | None = None) -> str:
    """The format of a file called `name` whose first bytes are `head` (`whole`: its bytes or its path, to
    tell a zip from a DOCX or an EPUB)."""
    lower = name.lower()
    ext = lower[lower.rfind(".") :] if "." in lower.rsplit("/", 1)[-1] else ""
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        if ext in (".docx", ".epub"):
            return ext[1:]
        return _zip_kind(whole) if whole is not None else "zip"
    if head.startswith(b"\x1f\x8b"):
        return "tar" if lower.endswith((".tar.gz", ".tgz")) else "gz"
    if len(head) > 262 and head[257:262] == b"ustar":
        return "tar"
    if head.startswith(b"PAR1"):
        return "parquet"
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    start = head.lstrip()[:15].lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "html"
    if head.startswith(b"From ") and b"\n" in head and b":" in head.split(b"\n", 2)[1]:
        return "mbox"
    return "binary" if b"\0" in head else "text"
