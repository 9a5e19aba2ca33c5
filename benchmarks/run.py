"""Run every benchmark (or some), print a table, write a JSON file of results.

Usage: python -m benchmarks.run [--quick|--full] [--only NAME ...] [--out benchmarks/results/latest.json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

from benchmarks.common import Figure

HERE = Path(__file__).resolve().parent
VERSIONED = [
    "rlm-kernel",
    "ipykernel",
    "RestrictedPython",
    "httpx",
    "aiohttp",
    "bm25s",
    "tree-sitter",
]


def discover() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def machine_info() -> dict:
    import os

    versions = {}
    for dist in VERSIONED:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "versions": versions,
    }


def format_table(figures: list[tuple[str, Figure]]) -> str:
    rows = [("bench", "figure", "value", "baseline", "ratio", "target", "met")]
    for bench, f in figures:
        rows.append(
            (
                bench,
                f.name,
                f"{f.value:.4g} {f.unit}",
                "" if f.baseline is None else f"{f.baseline:.4g} ({f.baseline_name or ''})",
                "" if f.ratio is None else f"{f.ratio:.3g}",
                f.target or "",
                {None: "", True: "yes", False: "NO"}[f.met],
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", default=True, help="the <5 minute mode (default)")
    mode.add_argument("--full", action="store_true", help="the release mode: more repetitions, bigger inputs")
    parser.add_argument(
        "--only", nargs="*", default=None, help=f"benchmarks to run, of: {', '.join(discover())}"
    )
    parser.add_argument("--out", default=str(HERE / "results" / "latest.json"))
    args = parser.parse_args(argv)
    quick = not args.full
    names = args.only or discover()
    results: list[tuple[str, Figure]] = []
    failures: dict[str, str] = {}
    for name in names:
        print(f"== {name} ({'quick' if quick else 'full'})", flush=True)
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.bench_{name}")
            for figure in module.run(quick=quick):
                results.append((name, figure))
        except Exception:  # noqa: BLE001 - report and go on with the other benchmarks
            failures[name] = traceback.format_exc()
            print(failures[name], file=sys.stderr)
        print(f"   ({time.perf_counter() - t0:.1f} s)", flush=True)
    print()
    print(format_table(results))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "mode": "quick" if quick else "full",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine_info(),
        "figures": [{"bench": b, **f.to_dict()} for b, f in results],
        "failures": failures,
    }
    out.write_text(json.dumps(payload, indent=2))
    print(f"\nwrote {out}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
