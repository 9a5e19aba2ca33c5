"""The benchmark's command: cases x systems through one recording proxy, results as JSON, a table printed.

    python -m benchmarks.longcontext.run --base-url "$(cut -d' ' -f1 /tmp/team/coder-url)" --model coder \\
        --families protocol,needle --lengths 32K --systems ours,rlms,bare,pipeline

`--gguf PATH` serves a GGUF with xllamacpp for the run instead. Calls are recorded in `--store` (default
benchmarks/results/longcontext/calls.jsonl); `--mode replay` re-runs offline from it (an unrecorded call
fails), `readwrite` (default) pays only for calls not recorded yet. Results go to `--out` after every case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import re
import sys
import time
from pathlib import Path

from benchmarks.longcontext import report
from benchmarks.longcontext.proxy import MODES, RecordingProxy
from benchmarks.longcontext.suite import FAMILIES, LENGTHS, build
from benchmarks.longcontext.systems import SYSTEMS, Settings, run_system

__all__ = ["main", "run"]

RESULTS = Path(__file__).resolve().parent.parent / "results" / "longcontext"


def run(
    upstream: str,
    *,
    families: list[str],
    lengths: list[str],
    per_length: int,
    systems: list[str],
    settings: Settings,
    store: Path,
    mode: str = "readwrite",
    out: Path | None = None,
    select: str | None = None,
    seed: int = 1,
    upstream_slots: int | None = None,
    log=print,  # noqa: ANN001
) -> dict:
    """Run every selected case through every system; returns (and writes to `out`) the results document."""
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown systems {unknown}: use {', '.join(SYSTEMS)}")
    cases = build(families, lengths, per_length, seed)
    if select:
        cases = [c for c in cases if re.search(select, c.id)]
    proxy = RecordingProxy(upstream, store, mode, upstream_slots=upstream_slots).start()
    doc = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "upstream": upstream,
        "settings": vars(settings) | {"rlms_python": None},
        "mode": mode,
        "python": platform.python_version(),
        "families": families,
        "lengths": lengths,
        "per_length": per_length,
        "seed": seed,
        "systems": systems,
        "rows": [],
    }
    try:
        for case in cases:
            for system in systems:
                row = run_system(system, case, proxy, settings)
                doc["rows"].append(row)
                log(
                    f"{system:8} {case.id:28} score={row['score']:.2f} {row['termination']:14} "
                    f"calls={row['calls']} tok={row['input_tokens']}/{row['output_tokens']} "
                    f"{row['wall_seconds']:.0f}s answer={row['answer'][:70]!r} {row.get('error') or ''}"[:400]
                )
                if out is not None:
                    _write(out, doc)
    finally:
        proxy.stop()
    doc["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if out is not None:
        _write(out, doc)
    return doc


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False))
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--base-url", help="an OpenAI-compatible server (…/v1) that is already running")
    where.add_argument("--gguf", help="a GGUF file to serve with xllamacpp for the run")
    parser.add_argument("--model", default="coder", help="the model name to send (default: coder)")
    parser.add_argument("--window", type=int, default=16384, help="the model's window in tokens")
    parser.add_argument("--families", default=",".join(["protocol", *FAMILIES]))
    parser.add_argument("--lengths", default="32K,128K", help=f"of {', '.join(LENGTHS)}")
    parser.add_argument("--per-length", type=int, default=1, help="cases per family and length")
    parser.add_argument("--select", help="a regular expression the case ids must match (e.g. 'needle|find')")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--max-iterations", type=int, default=8)
    parser.add_argument("--max-depth", type=int, default=1)
    parser.add_argument("--mode", choices=MODES, default="readwrite")
    parser.add_argument("--store", default=str(RESULTS / "calls.jsonl"))
    parser.add_argument("--out", default=str(RESULTS / "latest.json"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--upstream-slots", type=int, help="forward at most N calls at a time (a shared server's slots)"
    )
    parser.add_argument("--cite", action="store_true", help="ask our root for citations (%%%%rlm --cite)")
    args = parser.parse_args(argv)
    settings = Settings(
        model=args.model,
        window=args.window,
        max_iterations=args.max_iterations,
        max_depth=args.max_depth,
        cite=args.cite,
    )
    with contextlib.ExitStack() as stack:
        upstream = args.base_url
        if upstream is None:
            from benchmarks.longcontext.serve import xllamacpp_server

            upstream = stack.enter_context(xllamacpp_server(args.gguf, args.window))
        doc = run(
            upstream,
            families=args.families.split(","),
            lengths=[x for x in args.lengths.split(",") if x],
            per_length=args.per_length,
            systems=args.systems.split(","),
            settings=settings,
            store=Path(args.store),
            mode=args.mode,
            out=Path(args.out),
            select=args.select,
            seed=args.seed,
            upstream_slots=args.upstream_slots,
        )
    print()
    print(report.table(doc["rows"]))
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
