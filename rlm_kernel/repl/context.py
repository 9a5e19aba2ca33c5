"""Loading the REPL's `context`: a string, a file, a directory or a glob, from allowed roots only.

A corpus is its files joined with `=== path ===` markers; `files` maps each path to its (start, end) offsets
and `layouts` each path to where its pages, messages, cells or records start (`repl.positions`). Files in
other formats than text (PDF, HTML, DOCX, EPUB, notebooks, mail, tables, archives) are parsed by
`repl.documents` under its caps; a file that fails is skipped with its reason.
"""

from __future__ import annotations

import glob as globmod
import html
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from rlm_kernel.repl.documents.caps import Caps
from rlm_kernel.repl.documents.extract import FORMATS, extract_file, format_of, text_positions
from rlm_kernel.repl.documents.extracted import Extracted
from rlm_kernel.repl.documents.sniff import TEXT_FORMATS
from rlm_kernel.repl.errors import ContextError
from rlm_kernel.repl.positions import FileLayout
from rlm_kernel.repl.secret_files import secret_reason_by_path, secret_reason_of_file, secret_reason_of_text
from rlm_kernel.repl.textfile import BIG_FILE, DecodeRefused, assemble, read_text
from rlm_kernel.sandbox.roots import ROOTS_ENV, START_DIR, allowed_roots

__all__ = [
    "ContextSummary",
    "LoadedContext",
    "allowed_roots",
    "check_allowed",
    "is_secret_file",
    "load",
]

_SKIP_DIRS = {"__pycache__", "node_modules"}
_GLOB_CHARS = set("*?[")
_KINDS = frozenset({"auto", "text", "file", "dir", "glob", "data"})
PREVIEW_CHARS = 500
_start_dir = START_DIR

_SECRET_NOTE = "a secrets file: pass allow_secrets=True from your own cell to read it"


def is_secret_file(path: str | os.PathLike) -> bool:
    """True for files that hold keys judging by their directories and name (secret_files.py: `.ssh/`,
    `.kube/`, `.git/`, `.env*`, `.netrc`, `*.pem`, `id_rsa.bak` …); `secret_reason` also reads the head."""
    return secret_reason_by_path(path) is not None


def secret_reason(*paths: str | os.PathLike) -> str | None:
    """Why a file is a secret, by any of its `paths` (as named, resolved) or by the head of the last one."""
    for path in paths:
        reason = secret_reason_by_path(path)
        if reason is not None:
            return reason
    return secret_reason_of_file(paths[-1]) if paths else None


def secret_inside(member: str | None, text: str | None) -> str | None:
    """Why an archive member (by its path inside the archive) or an extracted document's text is a secret,
    with the note a skip list shows; for `extract_file`."""
    # archives made on Windows may separate a member's directories with backslashes (".ssh\\id_rsa")
    reason = secret_reason_by_path(member.replace("\\", "/")) if member is not None else None
    if reason is None and text is not None:
        reason = secret_reason_of_text(text)
    return None if reason is None else f"{reason}; {_SECRET_NOTE}"


def _refuse_secret(source: str, path: Path, allow_secrets: bool) -> None:
    if allow_secrets:
        return
    reason = secret_reason(Path(source), path)
    if reason is not None:
        raise ContextError(
            f"refused {source!r}: it is {_SECRET_NOTE} ({reason}; model-written code never can)"
        )


def _rule_text(roots: list[Path]) -> str:
    listed = ", ".join(str(r) for r in roots) or "(none)"
    return (
        f"context may only be read from the allowed roots [{listed}] — the notebook's directory tree plus "
        f"{ROOTS_ENV} (paths separated by '{os.pathsep}', set before starting the kernel) to allow others"
    )


def _relative_note(path: str) -> str:
    """For a relative path that was not found: where relative paths start, and how to move that place."""
    if os.path.isabs(path):
        return ""
    return (
        f"; a relative path starts at the kernel's working directory {Path.cwd()}, where the frontend "
        "started it: the notebook's directory in JupyterLab and nbconvert, papermill's --cwd"
    )


def check_allowed(path: str | os.PathLike) -> Path:
    """Resolve `path` (symlinks included) and return it if it lies under an allowed root, else refuse."""
    roots = allowed_roots()
    real = Path(path).expanduser()
    if not real.is_absolute():
        real = Path.cwd() / real
    real = real.resolve()
    if any(real == r or real.is_relative_to(r) for r in roots):
        return real
    raise ContextError(
        f"refused {str(path)!r}: resolves to {real}, outside the allowed roots; {_rule_text(roots)}"
    )


@dataclass(frozen=True)
class ContextSummary:
    """What `%context` shows: size, files, a short preview — never the whole text."""

    kind: str
    source: str
    chars: int
    files: tuple[tuple[str, int], ...] = ()
    skipped: tuple[str, ...] = ()
    preview: str = ""

    def _lines(self) -> list[str]:
        lines = [f"context: {self.kind} from {self.source} — {self.chars:,} chars"]
        if self.files:
            lines.append(f"{len(self.files)} file(s):")
            lines += [f"  {p}  ({n:,} chars)" for p, n in self.files[:20]]
            if len(self.files) > 20:
                lines.append(f"  … and {len(self.files) - 20} more")
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)}:")
            lines += [f"  {reason}" for reason in self.skipped[:50]]
            if len(self.skipped) > 50:
                lines.append(f"  … and {len(self.skipped) - 50} more (all in the summary's .skipped)")
        return lines

    def __repr__(self) -> str:
        return "\n".join(self._lines() + ["preview:", self.preview])

    def _repr_html_(self) -> str:
        first, *rest = self._lines()
        listing = "\n".join(rest)
        files = f"<pre style='margin: 0.2em 0'>{html.escape(listing)}</pre>" if listing else ""
        return (
            f"<div class='rlm-context-summary'><div>{html.escape(first)}</div>{files}"
            f"<details><summary>preview</summary><pre>{html.escape(self.preview)}</pre></details></div>"
        )


@dataclass(frozen=True)
class LoadedContext:
    """A loaded context: the value, the corpus index (read-only) and where it came from."""

    value: object
    kind: str
    source: str
    files: Mapping[str, tuple[int, int]] = field(default_factory=lambda: MappingProxyType({}))
    skipped: tuple[str, ...] = ()
    layouts: Mapping[str, FileLayout] = field(default_factory=lambda: MappingProxyType({}))

    def summary(self) -> ContextSummary:
        value = self.value
        if isinstance(value, str):
            chars, preview = len(value), value[:PREVIEW_CHARS]
        else:
            text = repr(value)
            chars, preview = len(text), text[:PREVIEW_CHARS]
        if chars > len(preview):
            preview += f"\n… ({chars - len(preview):,} more chars)"
        files = tuple((p, e - s) for p, (s, e) in self.files.items())
        return ContextSummary(self.kind, self.source, chars, files, self.skipped, preview)


def _display_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _looks_binary(path: Path) -> bool:
    with open(path, "rb") as f:
        return b"\0" in f.read(8192)


def _layout(extracted: Extracted, start: int) -> FileLayout:
    marks = tuple((start + offset, number) for offset, _, number in extracted.marks)
    return FileLayout(extracted.format, extracted.unit, marks, extracted.header_lines)


def _corpus(
    paths: list[Path],
    source: str,
    kind: str,
    encoding: str,
    errors: str,
    allow_secrets: bool = False,
    fmt: str = "auto",
    progress: Callable[[str, int, int], None] | None = None,
) -> LoadedContext:
    """Join the text of `paths` with `=== path ===` markers: text files as read, other formats parsed.

    Small corpora are joined in memory; from BIG_FILE bytes on, the files are read twice (measure, then write
    into the final str) so the corpus never exists twice (parsed documents are parsed once and kept).
    `progress(name, size, skipped)` is called after each file is read or parsed.
    """
    readable: list[tuple[Path, str, str]] = []
    skipped: list[str] = []
    parsed: dict[str, list[tuple[str, Extracted]]] = {}
    caps = Caps.from_env()
    expect = getattr(progress, "expect", None)
    if expect is not None:
        expect(len(paths))
    for index, path in enumerate(paths):
        try:
            _check_one(path, fmt, caps, encoding, errors, allow_secrets, readable, skipped, parsed, progress)
        except KeyboardInterrupt:
            if not readable:
                raise _unchanged(source, "before any file was read") from None
            skipped.append(f"{len(paths) - index:,} file(s) not read: {INTERRUPTED_NOTE}")
            break
    try:
        return _join(readable, parsed, skipped, source, kind, encoding, errors, progress)
    except KeyboardInterrupt as err:
        if str(err).startswith("the load of "):
            raise
        raise _unchanged(source, "while the context was being put together") from None


INTERRUPTED_NOTE = "the load was interrupted (load again to read them)"
"""How a load's summary ends the line of the files an interrupt left unread (the files read are kept)."""


def _unchanged(source: str, when: str) -> KeyboardInterrupt:
    return KeyboardInterrupt(
        f"the load of {source} was interrupted {when}: nothing was loaded, and `context` is unchanged"
    )


def _check_one(
    path: Path,
    fmt: str,
    caps: Caps,
    encoding: str,
    errors: str,
    allow_secrets: bool,
    readable: list[tuple[Path, str, str]],
    skipped: list[str],
    parsed: dict[str, list[tuple[str, Extracted]]],
    progress: Callable[[str, int, int], None] | None,
) -> None:
    """Check one file of a corpus: readable text goes into `readable`, a parsed document into `parsed` too,
    anything refused or failed into `skipped` with its reason."""
    name = _display_path(path)
    try:
        real = check_allowed(path)
    except ContextError:
        skipped.append(f"{name} (a link to outside the allowed roots)")
        return
    reason = None if allow_secrets else secret_reason(path, real)
    if reason is not None:
        skipped.append(f"{name} ({reason}; {_SECRET_NOTE})")
        return
    try:
        kind_of = format_of(path, name, fmt)
    except OSError as err:
        skipped.append(f"{name} ({err.strerror or err})")
        return
    if kind_of == "binary":
        skipped.append(f"{name} (binary)")
        return
    if kind_of not in TEXT_FORMATS:
        secret = None if allow_secrets else secret_inside
        extraction = extract_file(path, name, kind_of, caps, encoding, errors, secret)
        skipped.extend(extraction.skipped)
        if progress is not None:
            progress(name, _size(path), len(skipped))
        if not extraction.files:
            return
        parsed[name] = extraction.files
    readable.append((path, name, kind_of))


def _join(
    readable: list[tuple[Path, str, str]],
    parsed: dict[str, list[tuple[str, Extracted]]],
    skipped: list[str],
    source: str,
    kind: str,
    encoding: str,
    errors: str,
    progress: Callable[[str, int, int], None] | None,
) -> LoadedContext:
    files: dict[str, tuple[int, int]] = {}
    layouts: dict[str, FileLayout] = {}
    first_pass = [True]
    releasing = [False]  # the last pass: each parsed document is dropped once written (never held twice)

    def pieces() -> Iterator[tuple[str, Extracted]]:
        for index, (path, name, kind_of) in enumerate(readable):
            if first_pass[0]:
                try:
                    yield from _read_one(path, name, kind_of)
                except KeyboardInterrupt:
                    # the files read so far are the context; the others are left for a second load
                    if not index:
                        raise _unchanged(source, "before any file was read") from None
                    skipped.append(f"{len(readable) - index:,} file(s) not read: {INTERRUPTED_NOTE}")
                    del readable[index:]
                    return
                continue
            yield from _read_one(path, name, kind_of)

    def _read_one(path: Path, name: str, kind_of: str) -> Iterator[tuple[str, Extracted]]:
        if name in parsed:
            if not releasing[0]:
                yield from parsed[name]
                return
            docs = list(parsed.pop(name))
            while docs:
                yield docs.pop(0)
            return
        try:
            text = read_text(path, encoding=encoding, errors=errors)
        except DecodeRefused:
            note = f"{name} (not {encoding})"
            if note not in skipped:
                skipped.append(note)
            return
        except OSError as err:
            note = f"{name} ({err.strerror or err})"
            if note not in skipped:
                skipped.append(note)
            return
        if progress is not None and first_pass[0]:
            progress(name, len(text), len(skipped))
        yield name, text_positions(text, kind_of)

    def texts() -> Iterator[str]:
        files.clear()
        layouts.clear()
        pos = 0
        for name, extracted in pieces():
            text = extracted.text
            marker = f"=== {name} ===\n"
            files[name] = (pos + len(marker), pos + len(marker) + len(text))
            layouts[name] = _layout(extracted, pos + len(marker))
            pos += len(marker) + len(text) + 2
            del extracted
            yield marker
            yield text
            del text
            yield "\n\n"
        first_pass[0] = False
        releasing[0] = True

    # parsed documents count by their text (an archive's is larger than the archive), text files by size
    total_bytes = sum(
        sum(len(e.text) for _, e in parsed[name]) if name in parsed else _size(path)
        for path, name, _ in readable
    )
    documents = [name for _, name, _ in readable if name in parsed]
    value = None
    if total_bytes >= BIG_FILE:
        value = assemble(texts)  # measures in a first pass, writes (and drops documents) in the second
        if value is None and any(name not in parsed for name in documents):
            raise ContextError(f"the files of {source} changed while they were being loaded; load them again")
    releasing[0] = False
    if value is None:
        value = "".join(texts())
    if not files:
        detail = f" (skipped: {'; '.join(skipped[:5])})" if skipped else ""
        raise ContextError(f"no readable text files in {source}{detail}")
    return LoadedContext(
        value, kind, source, MappingProxyType(dict(files)), tuple(skipped), MappingProxyType(dict(layouts))
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        found += [Path(dirpath) / f for f in sorted(filenames) if not f.startswith(".")]
    return [p for p in found if p.is_file()]


def _looks_like_path(source: str) -> bool:
    """A one-line string names a path if it exists, or if it has no whitespace and contains a glob character
    or a path separator or starts with "~" or "."; anything else is text."""
    if "\n" in source or len(source) > 4096 or not source.strip():
        return False
    try:
        if Path(os.path.expanduser(source)).exists():
            return True
    except OSError:
        return False
    if any(c.isspace() for c in source):
        return False
    return bool(_GLOB_CHARS & set(source)) or os.sep in source or source.startswith(("~", "."))


def load(
    source: object,
    *,
    kind: str = "auto",
    encoding: str = "utf-8",
    errors: str = "strict",
    allow_secrets: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> LoadedContext:
    """Load a context from `source`.

    kind: "auto" (a one-line string naming a path or a glob pattern is loaded from disk, any other string
    is the text itself, a list/dict is data), or one of "text", "file", "dir", "glob", "data", or a format
    name ("pdf", "html", "docx", …: `documents.sniff.FORMATS`) to read the file, or every file, as.
    Formats are sniffed by content and extension otherwise; `progress(name, size, skipped)` follows a corpus.
    Secret files (`is_secret_file`) are refused, or skipped with a note in a directory or glob, unless
    `allow_secrets` (which only the person's own cells may pass: the `load_context` helper checks).
    A cell's values must already be exact built-ins (`source_from_cell`).
    """
    if type(kind) is not str or (kind not in _KINDS and kind not in FORMATS):
        raise ContextError(
            f"unknown kind {kind!r}; use 'auto', 'text', 'file', 'dir', 'glob' or 'data', or a format to "
            f"read the file(s) as: {', '.join(sorted(FORMATS - {'text'}))}"
        )
    fmt = kind if kind in FORMATS and kind != "text" else "auto"
    if fmt != "auto":
        kind = "auto"
    if isinstance(source, Path):
        source = str(source)
    if type(source) is not str:
        if kind not in {"auto", "data"} or type(source) not in (list, dict, tuple):
            raise ContextError(
                f"cannot load a context from a {type(source).__name__}; "
                "pass a string, a path, a glob, a list or a dict"
            )
        return LoadedContext(source, "data", type(source).__name__)
    if kind == "text" or (kind == "auto" and not _looks_like_path(source)):
        return LoadedContext(source, "text", "a string")
    if kind == "data":
        return LoadedContext(source, "data", "a string")
    expanded = os.path.expanduser(source)
    if kind == "glob" or (kind == "auto" and _GLOB_CHARS & set(source) and not Path(expanded).exists()):
        return _load_glob(source, expanded, encoding, errors, allow_secrets, fmt, progress)
    path = check_allowed(expanded)
    if not path.exists():
        raise ContextError(
            f"no such file or directory: {source!r} (looked for {path}{_relative_note(expanded)}). "
            "To use the string itself as the context, call load_context(text, kind='text')"
        )
    if path.is_dir():
        if kind == "file":
            raise ContextError(f"{source!r} is a directory; use kind='dir'")
        reason = None if allow_secrets else secret_reason_by_path(path)
        if reason is not None:
            raise ContextError(f"refused {source!r}: {reason}; it is {_SECRET_NOTE}")
        return _corpus(_walk(path), source, "directory", encoding, errors, allow_secrets, fmt, progress)
    if kind == "dir":
        raise ContextError(f"{source!r} is not a directory")
    if not path.is_file():
        raise ContextError(
            f"{source!r} is not a regular file (a device, socket or pipe); load a file instead"
        )
    _refuse_secret(source, path, allow_secrets)
    try:
        file_format = format_of(path, _display_path(path), fmt)
    except OSError as err:
        raise ContextError(f"cannot read {source!r}: {err.strerror or err}") from None
    if file_format == "binary":
        raise ContextError(
            f"{source!r} is a binary file in no format load_context reads; formats: "
            f"{', '.join(sorted(FORMATS))} (pass kind='pdf', … to name one)"
        )
    if file_format not in TEXT_FORMATS:
        return _corpus([path], source, "file", encoding, errors, allow_secrets, file_format, progress)
    try:
        text = read_text(path, encoding=encoding, errors=errors)
    except DecodeRefused as err:
        raise ContextError(str(err)) from None
    except MemoryError:
        raise ContextError(
            f"not enough memory to load {source!r} ({path.stat().st_size:,} bytes) under the kernel's memory "
            f"limit; load a smaller file or raise the limit"
        ) from None
    except OSError as err:
        raise ContextError(f"cannot read {source!r}: {err.strerror or err}") from None
    name = _display_path(path)
    layout = _layout(text_positions(text, file_format), 0) if file_format != "text" else FileLayout()
    return LoadedContext(
        text, "file", source, MappingProxyType({name: (0, len(text))}), (), MappingProxyType({name: layout})
    )


def _load_glob(
    source: str,
    expanded: str,
    encoding: str,
    errors: str,
    allow_secrets: bool = False,
    fmt: str = "auto",
    progress: Callable[[str, int, int], None] | None = None,
) -> LoadedContext:
    pattern = expanded if os.path.isabs(expanded) else str(Path.cwd() / expanded)
    matches = sorted(Path(p) for p in globmod.glob(pattern, recursive=True))
    files = [p for p in matches if p.is_file()]
    if not files:
        check_allowed(_fixed_prefix(pattern))  # outside the roots (the OS hides it): say so
        raise ContextError(f"the pattern {source!r} matches no files")
    if not any(_allowed(p) for p in files):
        check_allowed(files[0])  # raises, naming the rule
    return _corpus(files, source, "glob", encoding, errors, allow_secrets, fmt, progress)


def _fixed_prefix(pattern: str) -> str:
    """The directory a glob pattern starts from: its leading parts without glob characters."""
    parts: list[str] = []
    for part in Path(pattern).parts:
        if _GLOB_CHARS & set(part):
            break
        parts.append(part)
    return str(Path(*parts)) if parts else os.sep


def _allowed(path: Path) -> bool:
    try:
        check_allowed(path)
    except ContextError:
        return False
    return True
