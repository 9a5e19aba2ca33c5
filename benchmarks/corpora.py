"""Real source corpora for the analysis benchmarks, fetched into benchmarks/corpora/ (gitignored).

Python: the running interpreter's stdlib; Go: Debian's golang-1.19-src; JS/TS: npm tarballs.
"""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["CORPORA_DIR", "ensure_go", "ensure_npm", "iter_files", "python_stdlib_dir", "read_corpus"]

CORPORA_DIR = Path(__file__).resolve().parent / "corpora"
NPM_PACKAGES = ("typescript", "lodash", "react-dom", "rxjs", "zod")
GO_PACKAGE = "golang-1.19-src"
EXTENSIONS = {
    "python": (".py",),
    "go": (".go",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts", ".mts", ".cts"),
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


def _roots(language: str) -> list[Path]:
    if language == "python":
        return [python_stdlib_dir()]
    if language == "go":
        return [ensure_go()]
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
    for lang in EXTENSIONS:
        files = list(iter_files(lang))
        print(lang, len(files), sum(p.stat().st_size for p in files))
