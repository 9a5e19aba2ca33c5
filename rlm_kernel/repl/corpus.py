"""`load_corpus`: files under the allowed roots as a `Corpus` of partitions, never read whole.

Files are found and checked as `load_context` does (allowed roots, symlinks resolved, binary and secret files
skipped — a secret file named alone is refused); documents (PDF, HTML, DOCX, …: `repl.documents`) are parsed
once and their text spooled to the kernel's private temporary folder, which their partitions read;
each file becomes one or more partitions of about `partition_mb` MiB, cut later at line breaks.
"""

from __future__ import annotations

import glob as globmod
import os
import tempfile
from pathlib import Path

from rlm_kernel.analysis.corpus import Corpus, Partition, register
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.documents.caps import Caps
from rlm_kernel.repl.documents.extract import extract_file, format_of
from rlm_kernel.repl.documents.sniff import TEXT_FORMATS
from rlm_kernel.repl.errors import ContextError

__all__ = ["DEFAULT_PARTITION_MB", "load_corpus"]

DEFAULT_PARTITION_MB = 16


def _candidates(source: str) -> list[Path]:
    expanded = os.path.expanduser(source)
    if ctxmod._GLOB_CHARS & set(source) and not Path(expanded).exists():
        pattern = expanded if os.path.isabs(expanded) else str(Path.cwd() / expanded)
        files = [p for p in sorted(Path(p) for p in globmod.glob(pattern, recursive=True)) if p.is_file()]
        if not files:
            raise ContextError(f"the pattern {source!r} matches no files")
        return files
    path = ctxmod.check_allowed(expanded)
    if path.is_dir():
        return ctxmod._walk(path)
    if path.is_file():
        reason = ctxmod.secret_reason(expanded, path)
        if reason is not None:
            raise ContextError(
                f"refused {source!r}: it is a secrets file ({reason}); load_corpus never reads those"
            )
        return [path]
    raise ContextError(
        f"no such file or directory: {source!r} (looked for {path}{ctxmod._relative_note(expanded)}); "
        "give a directory, a glob or a file"
    )


def load_corpus(source: object, partition_mb: float = DEFAULT_PARTITION_MB) -> Corpus:
    """A Corpus of the text files of `source` (a directory, a glob or a file) under the allowed roots.

    Of text files nothing is read but the first 8 KiB (to tell formats apart); documents (PDF, HTML, DOCX,
    EPUB, notebooks, mail, JSON, Parquet, archives) are parsed now, under load_context's caps, and their text
    spooled to the kernel's temporary folder (`skipped` lists those that failed). `find_relevant` and
    `map_reduce` read one partition (about `partition_mb` MiB of whole lines) at a time, on the Dask
    cluster when RLM_DASK_SCHEDULER is set (its workers must see the temporary folder for documents).
    Text is decoded as UTF-8 with bad bytes replaced.
    """
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str) or not source.strip():
        raise ContextError("load_corpus needs a directory, a glob pattern or a file path as a str")
    if isinstance(partition_mb, bool) or not isinstance(partition_mb, int | float) or partition_mb <= 0:
        raise ContextError(f"load_corpus: partition_mb must be a number > 0, got {partition_mb!r}")
    step = max(1, int(partition_mb * 1024 * 1024))
    parts: list[Partition] = []
    names: list[str] = []
    total = 0
    refused: str | None = None
    skipped: list[str] = []
    caps = Caps.from_env()
    for path in _candidates(source):
        try:
            real = ctxmod.check_allowed(path)
        except ContextError as err:
            refused = refused or str(err)
            continue
        if ctxmod.secret_reason(path, real) is not None:
            continue  # keys are never part of a corpus (load_context's allow_secrets has no equivalent here)
        name = ctxmod._display_path(path)
        try:
            fmt = format_of(real, name)
            if fmt == "binary":
                skipped.append(f"{name} (binary)")
                continue
            if fmt not in TEXT_FORMATS:
                for doc_name, spooled in _spool(real, name, fmt, caps, skipped):
                    size = spooled.stat().st_size
                    names.append(doc_name)
                    total += size
                    parts += [Partition(str(spooled), a, min(a + step, size)) for a in range(0, size, step)]
                continue
            size = real.stat().st_size
        except OSError as err:
            skipped.append(f"{name} ({err.strerror or err})")
            continue
        names.append(name)
        total += size
        parts += [Partition(str(real), start, min(start + step, size)) for start in range(0, size, step)]
    if not names:
        raise ContextError(refused or f"no readable text files in {source!r}")
    return register(Corpus(source, tuple(names), len(parts), total, tuple(skipped)), tuple(parts))


def _spool(real: Path, name: str, fmt: str, caps: Caps, skipped: list[str]) -> list[tuple[str, Path]]:
    """Parse a document once and write its text (UTF-8) to a file in the kernel's private temporary folder,
    which the partitions then read like any text file: one spooled file per document (per archive member)."""
    extraction = extract_file(real, name, fmt, caps, "utf-8", "replace", ctxmod.secret_inside)
    skipped.extend(extraction.skipped)
    out: list[tuple[str, Path]] = []
    for doc_name, extracted in extraction.files:
        fd, spooled = tempfile.mkstemp(prefix="rlm-corpus-", suffix=".txt", dir=_spool_dir())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(extracted.text)
        out.append((doc_name, Path(spooled)))
    return out


_SPOOL: list[str] = []


def _spool_dir() -> str:
    if not _SPOOL:
        _SPOOL.append(tempfile.mkdtemp(prefix="rlm-corpus-spool-"))
    return _SPOOL[0]
