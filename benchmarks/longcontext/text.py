"""Realistic filler text: the installed standard library's docstrings (prose) and service log lines."""

from __future__ import annotations

import ast
import functools
import random
import sysconfig
from pathlib import Path

__all__ = ["SERVICES", "fit", "haystack", "log_lines", "paragraphs", "stdlib_root"]

SERVICES = ["auth", "billing", "search", "cart", "mailer", "images", "reports", "gateway"]
WORDS = "request served cache warm user session token refreshed queue drained job retried slow disk".split()
_SKIP = {"test", "idlelib", "lib2to3", "tkinter", "turtledemo", "site-packages", "ensurepip", "pydoc_data"}


def stdlib_root() -> Path:
    """The installed standard library's directory (its sources are the code corpus and the prose source)."""
    return Path(sysconfig.get_paths()["stdlib"])


@functools.lru_cache(maxsize=1)
def _sources() -> tuple[Path, ...]:
    root = stdlib_root()
    return tuple(p for p in sorted(root.rglob("*.py")) if not _SKIP & set(p.relative_to(root).parts[:-1]))


@functools.lru_cache(maxsize=512)
def paragraphs(path: Path) -> tuple[str, ...]:
    """The docstring paragraphs of 120+ chars of one source file, in source order, whitespace collapsed."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return ()
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            for para in (ast.get_docstring(node) or "").split("\n\n"):
                para = " ".join(para.split())
                if len(para) >= 120:
                    out.append(para)
    return tuple(out)


def haystack(rng: random.Random, chars: int) -> list[str]:
    """About `chars` chars of standard-library docstring paragraphs (joined by blank lines), seeded.

    Files are visited in a seeded order and only until enough text is found (a 32K haystack parses a few
    files, not the whole library); paragraphs are deduplicated, then cycled if the library runs out.
    """
    files = list(_sources())
    rng.shuffle(files)
    seen: set[str] = set()
    out: list[str] = []
    total = 0
    for path in files:
        for para in paragraphs(path):
            if para not in seen:
                seen.add(para)
                out.append(para)
                total += len(para) + 2
        if total >= chars:
            break
    unique = len(out)
    i = 0
    while total < chars:
        out.append(out[i % unique])
        total += len(out[-1]) + 2
        i += 1
    while len(out) > 1 and total - len(out[-1]) - 2 >= chars:
        total -= len(out.pop()) + 2
    return out


def log_lines(rng: random.Random, n: int, levels: tuple[str, ...] = ("INFO", "DEBUG", "WARN")) -> list[str]:
    """`n` service log lines (timestamp, level, service, words) drawn from `rng`."""
    lines = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))
        lines.append(
            f"2026-03-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d} {rng.choice(levels):5} "
            f"[{rng.choice(SERVICES)}] {words}"
        )
    return lines


def fit(lines: list[str], chars: int) -> list[str]:
    """The leading lines whose newline-joined text stays within `chars`."""
    out, total = [], 0
    for line in lines:
        if total + len(line) + 1 > chars:
            break
        out.append(line)
        total += len(line) + 1
    return out
