"""One corpus file (or archive member) to text: its format sniffed or given, its parser run under the caps
and a per-file time limit; a file that fails or exceeds a cap becomes a skip reason, never a partial load."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rlm_kernel.repl.documents import archives, mail, notebook, office, pdf, tables
from rlm_kernel.repl.documents.caps import Caps, FileSkipped, deadline
from rlm_kernel.repl.documents.extracted import Extracted
from rlm_kernel.repl.documents.html_text import extract_html
from rlm_kernel.repl.documents.sniff import FORMATS, TEXT_FORMATS, sniff

__all__ = ["FORMATS", "Extraction", "SecretCheck", "extract_file", "format_of", "text_positions"]

_HEAD = 8192


@dataclass
class Extraction:
    """What one file gave: its (name, text) pieces (an archive gives one per member) and skip reasons."""

    files: list[tuple[str, Extracted]]
    skipped: list[str]


def format_of(path: Path, name: str, kind: str = "auto") -> str:
    """`kind` when it names a format, else the sniffed format of the file at `path`."""
    if kind in FORMATS:
        return kind
    with open(path, "rb") as f:
        head = f.read(_HEAD)
    if head.startswith(b"PK\x03\x04") and not name.lower().endswith((".docx", ".epub")):
        return sniff(name, head, path)
    return sniff(name, head)


def text_positions(text: str, fmt: str) -> Extracted:
    """A text-like file (text, CSV, TSV, JSONL) as read, with where its records are."""
    if fmt in ("csv", "tsv"):
        return tables.extract_delimited(text, fmt)
    if fmt == "jsonl":
        return tables.extract_jsonl(text)
    return Extracted(text)


def _parse(data: bytes, fmt: str, caps: Caps) -> Extracted:
    if fmt == "pdf":
        return pdf.extract_pdf(data, caps)
    if fmt == "html":
        return extract_html(data)
    if fmt == "docx":
        return office.extract_docx(data, caps)
    if fmt == "epub":
        return office.extract_epub(data, caps)
    if fmt == "ipynb":
        return notebook.extract_ipynb(data)
    if fmt == "eml":
        return mail.extract_eml(data)
    if fmt == "mbox":
        return mail.extract_mbox(data, caps)
    if fmt == "json":
        return tables.extract_json(data, caps)
    if fmt == "parquet":
        return tables.extract_parquet(data, caps)
    raise FileSkipped(f"unknown format {fmt!r}")


def _decode(data: bytes, encoding: str, errors: str) -> str:
    try:
        return data.decode(
            "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding, errors
        )
    except (UnicodeDecodeError, LookupError) as err:
        raise FileSkipped(f"not {encoding} text ({err})") from None


# Judges a member or document: (its name inside the archive or None, its extracted text or None) → the
# reason it is a secret (a credentials path, a key in the text) or None. Given by the loader
# (repl/context.secret_inside, after repl/secret_files.py).
SecretCheck = Callable[[str | None, str | None], str | None]


def _one(
    name: str,
    data: bytes,
    fmt: str,
    caps: Caps,
    depth: int,
    encoding: str,
    errors: str,
    out: Extraction,
    secret: SecretCheck | None = None,
) -> None:
    try:
        if fmt in ("gz", "zip", "tar"):
            if depth >= caps.depth:
                raise FileSkipped(
                    f"an archive nested {depth + 1} deep (archives inside archives: {caps.depth} at most)"
                )
            members = archives.members(name, data, fmt, caps)
            for member in members:
                # its path inside this archive: a member's own name may hold "!" (".ssh/config!notes.txt")
                own = member.name[len(name) + 1 :] if member.name.startswith(name + "!") else member.name
                reason = secret(own, None) if secret is not None else None
                if reason is not None:
                    out.skipped.append(f"{member.name} ({reason})")
                    continue
                head = member.data[:_HEAD]
                inner = sniff(member.name, head, member.data if head.startswith(b"PK\x03\x04") else None)
                if inner == "binary":
                    out.skipped.append(f"{member.name} (binary)")
                    continue
                _one(member.name, member.data, inner, caps, depth + 1, encoding, errors, out, secret)
            return
        if fmt in TEXT_FORMATS:
            extracted = text_positions(_decode(data, encoding, errors), fmt)
        else:
            extracted = _parse(data, fmt, caps)
        caps.check_text(extracted.text, name)
        reason = secret(None, extracted.text) if secret is not None else None
        if reason is not None:
            out.skipped.append(f"{name} ({reason})")
            return
        out.files.append((name, extracted))
    except FileSkipped as err:
        out.skipped.append(f"{name} ({err})")
    except MemoryError:
        out.skipped.append(f"{name} (not enough memory to parse it under the kernel's memory limit)")
    except RecursionError:
        out.skipped.append(f"{name} (nested too deeply to parse)")


def extract_file(
    path: Path,
    name: str,
    fmt: str,
    caps: Caps,
    encoding: str = "utf-8",
    errors: str = "strict",
    secret: SecretCheck | None = None,
) -> Extraction:
    """Parse the file at `path` (shown as `name`) as `fmt` within `caps` and `caps.seconds`; members and
    documents that `secret` judges secrets are skipped with its reason."""
    out = Extraction([], [])
    try:
        size = path.stat().st_size
        if size > caps.expanded_bytes:
            raise FileSkipped(
                f"{size:,} bytes, over the {caps.expanded_mb:g} MB cap (RLM_CORPUS_MAX_EXPANDED_MB)"
            )
        with deadline(caps.seconds, name):
            data = path.read_bytes()
            _one(name, data, fmt, caps, 0, encoding, errors, out, secret)
    except FileSkipped as err:
        del out.files[:]
        out.skipped.append(f"{name} ({err})")
    except OSError as err:
        out.skipped.append(f"{name} ({err.strerror or err})")
    return out
