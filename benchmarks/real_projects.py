"""Real projects we did not write, fetched from registries at benchmark time: the find_relevant test corpus.

Unlike `benchmarks.corpora` (CPython's stdlib, Go's own sources, big npm packages — the corpus the ranking
was first tuned on), these are ordinary application libraries: Python sdists from PyPI (their docs give the
prose), Go libraries from Debian's `golang-*-dev` packages, JavaScript and TypeScript packages from npm. All
is unpacked under benchmarks/corpora/real/ (gitignored) and never committed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from benchmarks.corpora import CORPORA_DIR

__all__ = ["KINDS", "PROJECTS", "ensure_projects", "project_texts"]

REAL_DIR = CORPORA_DIR / "real"
# (registry, name==version, language); pinned so every run ranks the same text
PROJECTS: tuple[tuple[str, str, str], ...] = (
    ("pypi", "flask==3.1.0", "python"),
    ("pypi", "click==8.1.8", "python"),
    ("pypi", "rich==13.9.4", "python"),
    ("debian", "golang-github-spf13-cobra-dev", "go"),
    ("debian", "golang-github-gorilla-mux-dev", "go"),
    ("debian", "golang-github-prometheus-client-golang-dev", "go"),
    ("debian", "golang-gopkg-yaml.v3-dev", "go"),
    ("npm", "axios@1.21.1", "javascript"),
    ("npm", "moment@2.31.0", "javascript"),
    ("npm", "express@5.3.0", "javascript"),
    ("npm", "@trpc/server@11.25.2", "typescript"),
    ("npm", "mobx@7.1.3", "typescript"),
    ("npm", "@tanstack/query-core@5.108.4", "typescript"),
)
_SKIPPED_DIRS = frozenset({"dist", "locale", "min", "cjs", "esm", "umd", "node_modules"})
KINDS = {
    "python": (".py",),
    "go": (".go",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts", ".mts", ".tsx"),
    "prose": (".rst", ".md", ".txt"),
}


def _slug(name: str) -> str:
    return name.replace("@", "_").replace("/", "_").replace("==", "-")


def _fetch(registry: str, name: str, dest: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if registry == "pypi":
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", name]
        elif registry == "npm":
            cmd = ["npm", "pack", name, "--silent"]
        else:
            cmd = ["apt-get", "download", name]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0 and registry == "debian":
            subprocess.run(["apt-get", "update"], capture_output=True, check=False)
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"could not fetch {name} from {registry}: {proc.stderr.strip()[-300:]}")
        archive = next(p for p in Path(tmp).iterdir() if p.is_file())
        staging = Path(tmp) / "unpacked"
        if archive.suffix == ".deb":
            subprocess.run(["dpkg-deb", "-x", str(archive), str(staging)], check=True)
        else:
            with tarfile.open(archive) as tar:
                tar.extractall(staging, filter="data")
        shutil.move(str(staging), str(dest))


def ensure_projects() -> Path:
    """Fetch and unpack every project once; return the folder holding them (one sub-folder each)."""
    REAL_DIR.mkdir(parents=True, exist_ok=True)
    for registry, name, _ in PROJECTS:
        dest = REAL_DIR / _slug(name)
        if not dest.exists():
            _fetch(registry, name, dest)
    return REAL_DIR


def project_texts(max_file_bytes: int = 400_000) -> dict[str, list[tuple[str, str]]]:
    """(path, text) pairs per kind (python, go, javascript, typescript, prose) over every project.

    Declaration files (.d.ts), minified bundles, locale tables and compiled copies (dist/, cjs/, esm/ builds)
    are left out: they are not what a person searches.
    """
    root = ensure_projects()
    out: dict[str, list[tuple[str, str]]] = {kind: [] for kind in KINDS}
    for _, name, _ in PROJECTS:
        for path in sorted((root / _slug(name)).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if not path.is_file() or path.stat().st_size > max_file_bytes or path.stat().st_size == 0:
                continue
            if path.name.endswith((".d.ts", ".d.mts", ".d.cts", ".min.js", ".map")):
                continue
            if any(part in _SKIPPED_DIRS for part in path.parts):
                continue
            kind = next((k for k, exts in KINDS.items() if path.name.endswith(exts)), None)
            if kind is None:
                continue
            try:
                out[kind].append((rel, path.read_text(encoding="utf-8")))
            except (UnicodeDecodeError, OSError):
                continue
    return out


if __name__ == "__main__":
    for kind, files in project_texts().items():
        print(kind, len(files), sum(len(t) for _, t in files))
