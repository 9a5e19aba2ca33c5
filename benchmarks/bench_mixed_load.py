"""Loading a large mixed corpus with `load_context` (issue 28): peak memory against the size of the text.

The corpus is written to a temporary folder (never into the repository): plain text, code and logs; CSV, TSV,
JSON, JSONL and Parquet tables; HTML pages; mbox and eml mail; notebooks; PDF and DOCX; gz, zip and tar.gz
archives — by text size about 35 % plain files, 30 % tables, 35 % documents and archives. One seed file per
format is made with its own library and copied under new names until the corpus reaches its size (copies
cost the loader as much as distinct files; the seeds hold Latin-1 text, so the context is a 1-byte-per-char
str). Each load runs in a fresh subprocess that reports its peak RSS growth (VmHWM, reset first) and the
context's size in UTF-8 bytes and as a Python str. Target: peak < 2x the text size.

Run: `python -m benchmarks.bench_mixed_load --mb 100 300` (or `--mb 1024`; needs the [corpora] extra, fpdf2).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import mailbox
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from email.message import EmailMessage
from pathlib import Path

__all__ = ["make_mixed_corpus", "measure"]

REPO = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
WORDS = (
    "harbour ledger wheat cobalt saffron orchard bridge glacier tide lantern copper kettle anvil bellows "
    "meadow quarry river barge crate florin café naïve résumé the of and to in is was for on with as by "
    "request served status bytes path items handler retry budget socket frame token cache"
).split()


def _lines(rng: random.Random, n: int, width: int = 12) -> list[str]:
    return [" ".join(rng.choices(WORDS, k=width)) for _ in range(n)]


def _seeds(root: Path) -> dict[str, Path]:
    """One file per format, each holding roughly 0.5-2 MB of text."""
    import docx
    import nbformat
    import pyarrow as pa
    import pyarrow.parquet as pq
    from fpdf import FPDF

    rng = random.Random(28)
    root.mkdir(parents=True)
    seeds: dict[str, Path] = {}

    def put(name: str, data: bytes | str) -> None:
        path = root / name
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        seeds[name] = path

    put("notes.txt", "\n".join(_lines(rng, 20_000)) + "\n")
    put(
        "module.py",
        "".join(
            f"def handler_{i}(request, retry={i % 7}):\n    return cache_{i % 97}(request)\n\n"
            for i in range(25_000)
        ),
    )
    put(
        "server.log",
        "".join(
            f"2026-12-04T10:{i % 60:02d}:00Z INFO served /items/{i} in {i % 90} ms\n" for i in range(30_000)
        ),
    )
    put(
        "rows.csv",
        "id,city,note\n" + "".join(f"{i},Oslo,{' '.join(rng.choices(WORDS, k=8))}\n" for i in range(25_000)),
    )
    put(
        "rows.tsv",
        "id\tname\n" + "".join(f"{i}\t{' '.join(rng.choices(WORDS, k=8))}\n" for i in range(25_000)),
    )
    put(
        "events.jsonl",
        "".join(
            json.dumps({"id": i, "event": " ".join(rng.choices(WORDS, k=8))}) + "\n" for i in range(20_000)
        ),
    )
    put("items.json", json.dumps([{"item": w, "n": i} for i, w in enumerate(rng.choices(WORDS, k=20_000))]))
    table = pa.table(
        {"id": list(range(20_000)), "note": [" ".join(rng.choices(WORDS, k=8)) for _ in range(20_000)]}
    )
    pq.write_table(table, str(root / "table.parquet"))
    seeds["table.parquet"] = root / "table.parquet"
    body = "".join(f"<h2>Section {i}</h2><p>{' '.join(rng.choices(WORDS, k=80))}</p>" for i in range(1500))
    put(
        "page.html",
        f"<html><head><title>Report</title></head><body><nav>home</nav><main>{body}</main></body></html>",
    )
    box = mailbox.mbox(str(root / "inbox.mbox"))
    for i in range(1500):
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = f"a{i}@example.org", "b@example.org", f"note {i}"
        msg.set_content("\n".join(_lines(rng, 8)))
        box.add(msg)
    box.flush()
    box.close()
    seeds["inbox.mbox"] = root / "inbox.mbox"
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "clerk@example.org", "mayor@example.org", "Bridge"
    msg.set_content("\n".join(_lines(rng, 3000)))
    put("letter.eml", bytes(msg))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "\n".join(_lines(rng, 5)),
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="\n".join(_lines(rng, 5)))],
        )
        for _ in range(800)
    ]
    nbformat.write(nb, str(root / "notes.ipynb"))
    seeds["notes.ipynb"] = root / "notes.ipynb"
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    for _ in range(150):
        pdf.add_page()
        for line in _lines(rng, 45, 11):
            pdf.cell(0, 5, line.encode("latin-1", "replace").decode("latin-1"), new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(root / "report.pdf"))
    seeds["report.pdf"] = root / "report.pdf"
    document = docx.Document()
    for i in range(300):
        document.add_heading(f"Part {i}", level=2)
        document.add_paragraph(" ".join(rng.choices(WORDS, k=120)))
    document.save(str(root / "memo.docx"))
    seeds["memo.docx"] = root / "memo.docx"
    put("log.txt.gz", gzip.compress("\n".join(_lines(rng, 15_000)).encode()))
    with zipfile.ZipFile(root / "bundle.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.txt", "\n".join(_lines(rng, 8000)))
        zf.writestr("b.html", f"<html><body><p>{' '.join(rng.choices(WORDS, k=40_000))}</p></body></html>")
    seeds["bundle.zip"] = root / "bundle.zip"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = "\n".join(_lines(rng, 8000)).encode()
        info = tarfile.TarInfo("docs/c.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    put("pack.tar.gz", buf.getvalue())
    return seeds


def _text_sizes(seeds: dict[str, Path], work: Path) -> dict[str, int]:
    """The characters each seed adds to a context (loaded once each, in this process)."""
    from rlm_kernel.repl import context as ctxmod

    sizes = {}
    for name, path in seeds.items():
        sizes[name] = len(ctxmod.load(str(path), kind="file").value) if work else 0
    return sizes


def make_mixed_corpus(root: Path, total_mb: float, seed_dir: Path) -> int:
    """Copy the seeds under `root` in rotation until their text adds up to `total_mb` MiB; returns files."""
    os.environ["RLM_CONTEXT_ROOTS"] = f"={seed_dir}"
    os.chdir(seed_dir)
    seeds = _seeds(seed_dir / "seeds")
    sizes = _text_sizes(seeds, seed_dir)
    root.mkdir(parents=True)
    names = sorted(seeds)
    total, count = 0, 0
    while total < total_mb * MB:
        name = names[count % len(names)]
        sub = root / f"d{count // 200:03d}"
        sub.mkdir(exist_ok=True)
        shutil.copyfile(seeds[name], sub / f"{count:05d}-{name}")
        total += sizes[name]
        count += 1
    return count


def _status(field: str) -> int:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith(field + ":"):
            return int(row.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _worker(folder: str, preload: bool) -> None:
    from rlm_kernel.repl import context as ctxmod

    os.environ["RLM_CONTEXT_ROOTS"] = f"={Path(folder).parent}"
    os.chdir(Path(folder).parent)
    start = _status("VmRSS")
    if preload:  # the parsers' libraries, imported on first use: a fixed cost, measured apart
        import docx  # noqa: F401
        import lxml.html  # noqa: F401
        import pyarrow.parquet  # noqa: F401
        import pypdf  # noqa: F401
    before = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    t0, c0 = time.perf_counter(), time.process_time()
    loaded = ctxmod.load(folder)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _status("VmHWM") - before
    value = loaded.value
    out = {
        "seconds": seconds,
        "cpu": cpu,
        "peak": peak,
        "libraries": before - start,
        "chars": len(value),
        "str_bytes": sys.getsizeof(value),
        "files": len(loaded.files),
        "skipped": len(loaded.skipped),
        "skipped_first": list(loaded.skipped[:3]),
    }
    del value, loaded
    print(json.dumps(out))


def measure(total_mb: float, preload: bool = True) -> dict:
    """Make a corpus of about `total_mb` MiB of text in a temporary folder, load it in a subprocess."""
    with tempfile.TemporaryDirectory(prefix="rlm-mixed-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        files = make_mixed_corpus(work / "corpus", total_mb, work)
        made = time.perf_counter() - t0
        disk = sum(p.stat().st_size for p in (work / "corpus").rglob("*") if p.is_file())
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_mixed_load", "--worker", str(work / "corpus")]
            + (["--preload"] if preload else []),
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
            timeout=3600,
        )
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result.update(files_written=files, disk_bytes=disk, made_seconds=made)
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, nargs="*", default=[100.0])
    parser.add_argument("--worker")
    parser.add_argument("--preload", action="store_true")
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.preload)
        return
    for mb in args.mb:
        r = measure(mb)
        text_mb = r["chars"] / MB  # the seeds are Latin-1: one byte per char in the str, ~1 in UTF-8
        print(
            f"{mb:g} MiB target: {r['files']:,} files ({r['files_written']:,} written, "
            f"{r['disk_bytes'] / MB:.0f} MiB on disk), {r['chars'] / 1e6:.1f}M chars of text "
            f"({r['str_bytes'] / MB:.1f} MiB as a str); peak RSS growth {r['peak'] / MB:.1f} MiB "
            f"= {r['peak'] / r['str_bytes']:.2f}x the text (target < 2x; the parsers' libraries, imported "
            f"first: {r['libraries'] / MB:.0f} MiB); load {r['seconds']:.1f} s wall, {r['cpu']:.1f} s CPU "
            f"({text_mb / max(r['cpu'], 1e-9):.1f} MiB/s); skipped {r['skipped']} {r['skipped_first']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
