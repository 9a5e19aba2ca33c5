"""Loading a large file as the REPL's context: time and peak memory against the file size; slicing cost.

Each load runs in a fresh subprocess reporting its peak RSS growth (VmHWM, reset first via clear_refs).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import Figure

__all__ = ["run"]

REPO = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024
LINE = b"2026-11-29T20:00:00Z INFO request served in 12ms path=/api/items/4711 status=200 bytes=5120\n"


def _write(path: Path, size: int, *, non_ascii: bool = False) -> None:
    line = LINE.replace(b"INFO", "ÉTAT".encode()) if non_ascii else LINE
    block = (line * (4 * MiB // len(line) + 1))[: 4 * MiB]
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)


def _status(field: str) -> int:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith(field + ":"):
            return int(row.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _worker(path: str, mode: str) -> None:
    """Load `path` by `mode` (context|read_text|read_bytes); print seconds and peak RSS growth as JSON."""
    from rlm_kernel.repl import context as ctxmod
    from rlm_kernel.sandbox.roots import ROOTS_ENV

    os.environ[ROOTS_ENV] = f"={Path(path).parent}"  # only this root (a subprocess of its own)
    os.chdir(Path(path).parent)
    before = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    t0 = time.perf_counter()
    if mode == "context":
        value = ctxmod.load(path).value
    elif mode == "read_text":
        value = Path(path).read_text(encoding="utf-8")
    else:
        value = Path(path).read_bytes()
    seconds = time.perf_counter() - t0
    peak = _status("VmHWM") - before
    print(json.dumps({"seconds": seconds, "peak": peak, "length": len(value)}))


def _measure(path: Path, mode: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_context", "--worker", str(path), mode],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _slice_time(text: str, n: int = 20_000, width: int = 1000) -> float:
    rng = random.Random(0)
    starts = [rng.randrange(0, len(text) - width) for _ in range(n)]

    def go() -> float:
        t0 = time.perf_counter()
        for s in starts:
            text[s : s + width]
        return time.perf_counter() - t0

    # the fastest of 7 passes: on a shared 2-core machine the other passes measure the neighbours
    return min(go() for _ in range(7)) / n


def run(quick: bool = True) -> list[Figure]:
    sizes = [256 * MiB] if quick else [256 * MiB, 1024 * MiB]
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="bench-context-") as tmp:
        for size in sizes:
            path = Path(tmp) / f"log-{size // MiB}m.txt"
            _write(path, size)
            label = f"{size // MiB} MiB ASCII"
            raw = _measure(path, "read_bytes")
            ctx = _measure(path, "context")
            naive = _measure(path, "read_text")
            assert ctx["length"] == size
            figures += [
                Figure(
                    f"load_context peak RSS growth, {label}",
                    ctx["peak"] / MiB,
                    "MiB",
                    size / MiB,
                    "file size",
                    "≤1.3×",
                    ctx["peak"] <= 1.3 * size,
                ),
                Figure(
                    f"Path.read_text peak RSS growth, {label} (for comparison)",
                    naive["peak"] / MiB,
                    "MiB",
                    size / MiB,
                    "file size",
                ),
                Figure(
                    f"load_context time, {label}",
                    ctx["seconds"],
                    "s",
                    raw["seconds"],
                    "read_bytes of the same file",
                    note="page cache warm",
                ),
            ]
            path.unlink()
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        files = 64
        for i in range(files):
            _write(corpus / f"part{i:02d}.log", sizes[0] // files)
        ctx = _measure(corpus, "context")
        figures.append(
            Figure(
                f"load_context peak RSS growth, directory of {files} files, {sizes[0] // MiB} MiB",
                ctx["peak"] / MiB,
                "MiB",
                sizes[0] / MiB,
                "total file size",
                "≤1.3×",
                ctx["peak"] <= 1.3 * sizes[0],
                note="read twice, written into the final str",
            )
        )
        for part in corpus.iterdir():
            part.unlink()
        path = Path(tmp) / "log-nonascii.txt"
        size = sizes[0]
        _write(path, size, non_ascii=True)
        raw = _measure(path, "read_bytes")
        ctx = _measure(path, "context")
        label = f"{size // MiB} MiB UTF-8 non-ASCII"
        figures += [
            Figure(
                f"load_context peak RSS growth, {label}",
                ctx["peak"] / MiB,
                "MiB",
                size / MiB,
                "file size",
                "≤1.3×",
                ctx["peak"] <= 1.3 * size,
                note="decoded twice, written into the final str",
            ),
            Figure(
                f"load_context time, {label}",
                ctx["seconds"],
                "s",
                raw["seconds"],
                "read_bytes of the same file",
                note="page cache warm",
            ),
        ]
        path.unlink()
    # Slicing: a str slice copies only the slice, so its cost must not grow with the context. Random slices
    # of a big context miss the CPU caches (32 MiB L3 here), so the size-independence figure compares the big
    # context with one 4× smaller that is also far larger than the caches; the cache-resident 1 MiB baseline
    # is reported too, for what leaving the caches costs.
    unit = (LINE.decode() * (MiB // len(LINE) + 1))[:MiB]
    big = unit * (sizes[-1] // MiB)
    mid = unit * (sizes[-1] // MiB // 4)
    t_big, t_mid, t_small = _slice_time(big) * 1e9, _slice_time(mid) * 1e9, _slice_time(unit) * 1e9
    ratio = t_big / t_mid
    figures += [
        Figure(
            f"slice context[i:i+1000], {len(big) // MiB} MiB context",
            t_big,
            "ns",
            t_mid,
            f"same slice of a {len(mid) // MiB} MiB context",
            "≤1.5× (independent of size)",
            ratio <= 1.5,
        ),
        Figure(
            f"slice context[i:i+1000], {len(big) // MiB} MiB context vs cache-resident",
            t_big,
            "ns",
            t_small,
            "same slice of a 1 MiB context",
            note="random access out of the CPU caches",
        ),
    ]
    del big, mid
    return figures


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], sys.argv[3])
    else:
        for figure in run(quick="--full" not in sys.argv):
            print(figure.to_dict())
        os._exit(0)
