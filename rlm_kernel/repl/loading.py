"""The loading helpers (`load_context`, `load_corpus`) and how a loaded context is bound into a namespace
(`context`, `ctx`, `context_0`, `context_files`, the appended `context_N`)."""

from __future__ import annotations

import os

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl import corpus as corpusmod
from rlm_kernel.repl.errors import ContextError
from rlm_kernel.repl.load_progress import LoadProgress
from rlm_kernel.repl.state import ReplState
from rlm_kernel.repl.translate import translated
from rlm_kernel.sandbox.coerce import CoercionError, exact_float, exact_str, plain_data
from rlm_kernel.sandbox.origin import require_person_call

__all__ = ["add_context", "context_source", "load_context", "load_corpus", "set_context"]


def context_source(source: object) -> object:
    """What `load_context`/`rlm_run` got, as exact built-ins: a path-like object's `__fspath__` runs here
    (in the cell, under its limits) and its result is copied to an exact str; data is deep-copied."""
    if isinstance(source, os.PathLike) and not issubclass(type(source), str | bytes | list | tuple | dict):
        source = os.fspath(source)
        if issubclass(type(source), bytes):
            raise CoercionError("load_context: a path-like object gave bytes; give it a str path")
    if issubclass(type(source), str):
        return exact_str(source, "load_context: source")
    return plain_data(source, "load_context: source")


def set_context(state: ReplState, ns: dict, loaded: ctxmod.LoadedContext) -> None:
    """Bind a loaded context into `ns` (and into the repair snapshot so it survives rebinding)."""
    values = {
        "context": loaded.value,
        "ctx": loaded.value,
        "context_0": loaded.value,
        "context_files": loaded.files,
    }
    ns.update(values)
    state.protected.update(values)
    state.protected["__loaded_context__"] = loaded


def add_context(state: ReplState, ns: dict, loaded: ctxmod.LoadedContext, append: bool) -> None:
    """`load_context`'s binding: the first context as `context`/`ctx`/`context_0`, each appended one as the
    next `context_N`; without `append`, the earlier `context_N` are dropped."""
    count = state.protected.get("__context_count__")
    count = count if isinstance(count, int) else 0
    if append and count:
        name = f"context_{count}"
        ns[name] = state.protected[name] = loaded.value
        state.protected["__context_count__"] = count + 1
        return
    for i in range(1, count):
        ns.pop(f"context_{i}", None)
        state.protected.pop(f"context_{i}", None)
    set_context(state, ns, loaded)
    state.protected["__context_count__"] = 1


def load_context(
    state: ReplState,
    ns: dict,
    source: object,
    kind: str = "auto",
    encoding: str = "utf-8",
    errors: str = "strict",
    allow_secrets: bool = False,
    append: bool = False,
):
    """Load `context` (and `ctx`, `context_files`) from a string, a file, a directory or a glob.

    load_context(source, kind="auto", encoding="utf-8", errors="strict", allow_secrets=False,
                 append=False) -> summary
    `context_0` is the loaded context too; with append=True the source is added as `context_1`,
    `context_2`, … and `context` stays the first (the reference RLM library's names).
    A directory or glob becomes a corpus: files joined with `=== path ===` lines; `context_files` maps
    each path to its (start, end) offsets. Only paths under the allowed roots (the notebook's directory by
    default, or RLM_CONTEXT_ROOTS) are read. kind: auto, text, file, dir, glob or data.
    Secret files (.env*, .netrc, .pypirc, .git-credentials, *.pem, *.key, ssh keys, .git/) are refused
    (skipped in a directory or glob) unless your own cell passes allow_secrets=True; model code cannot.
    PDF, HTML, DOCX, EPUB, .ipynb, .eml/.mbox, CSV/TSV/JSON/JSONL/Parquet and .gz/.zip/.tar files are read
    as text with their pages, messages, cells or records kept (kind="pdf", … forces a format): locate(i)
    says where an offset, span or quote is. A file that fails or exceeds a cap is skipped with its reason.
    """
    with translated(state, "load_context", error=ContextError, model_call=False):
        source = context_source(source)
        kind = exact_str(kind, "load_context: kind")
        encoding = exact_str(encoding, "load_context: encoding")
        errors = exact_str(errors, "load_context: errors")
        if append is not True and append is not False:
            raise CoercionError("load_context: append must be True or False")
        if allow_secrets is not False:
            if allow_secrets is not True:
                raise CoercionError("load_context: allow_secrets must be True or False")
            # only a person's own cell, calling load_context itself (no wrapper model code could have made)
            require_person_call(
                "load_context(..., allow_secrets=True)",
                "load_context",
                state.protected.get("load_context"),
                "allow_secrets",
            )
        shown = LoadProgress() if state.run is None else None  # a person's load: progress once it is long
        try:
            loaded = ctxmod.load(
                source,
                kind=kind,
                encoding=encoding,
                errors=errors,
                allow_secrets=allow_secrets,
                progress=shown,
            )
        except MemoryError:
            raise ContextError(
                "not enough memory to load this context under the kernel's memory limit (RLM_MEMORY_MB); "
                "load fewer or smaller files"
            ) from None
        except KeyboardInterrupt:
            if shown is not None:
                shown.done("interrupted: nothing loaded, the context is unchanged")
            raise
        if shown is not None:
            cut = any(line.endswith(ctxmod.INTERRUPTED_NOTE) for line in loaded.skipped)
            if cut:  # an interrupt can land after a file is counted and before it is kept: show the kept
                shown.files = len(loaded.files)
            shown.done("interrupted: the files read before are the context" if cut else "loaded")
    add_context(state, ns, loaded, append)
    return loaded.summary()


def load_corpus(
    state: ReplState, ns: dict, source: object, partition_mb: float = corpusmod.DEFAULT_PARTITION_MB
):
    """A Corpus of the text files of a directory, glob or file, read a partition at a time.

    load_corpus(source, partition_mb=16) -> Corpus
    For data bigger than memory: pass it to find_relevant(corpus, query) or map_reduce(corpus, ...),
    which read one partition (about partition_mb MiB) at a time — on the Dask cluster when the kernel
    was started with RLM_DASK_SCHEDULER. Only paths under the allowed roots are read, as for load_context.
    """
    with translated(state, "load_corpus", error=ContextError, model_call=False):
        source = exact_str(source, "load_corpus: source")
        partition_mb = exact_float(partition_mb, "load_corpus: partition_mb")
        return corpusmod.load_corpus(source, partition_mb)
