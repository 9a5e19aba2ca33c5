"""The issue's failing protocol as cases: five plain questions a user asked `%%rlm` over long contexts.

A needle in 150K chars of logs, a count over 100K chars, a two-fact join ~110K chars apart (the tasks of the
former `benchmarks/slow_rlm_coder.py`, same generator and seed), and two questions over the installed
standard library's `email` package: which file defines `_fold_mime_parameters`, and how many files it has.
"""

from __future__ import annotations

import ast
import random
import re

from benchmarks.longcontext.cases import Case, join_corpus
from benchmarks.longcontext.codeqa import package_files
from benchmarks.longcontext.scoring import score_number, score_token
from benchmarks.longcontext.text import fit, log_lines

__all__ = ["make"]


def _logs(seed: int) -> list[Case]:
    rng = random.Random(seed)
    lines = fit(log_lines(rng, 4000), 150_000)
    code = f"{rng.randint(1000, 9999)}-{rng.choice(['ALPHA', 'BRAVO', 'DELTA', 'OSCAR'])}"
    at = int(len(lines) * 0.63)
    lines[at] = lines[at].split("[")[0] + f"[vault] the maintenance override code is {code}"
    find = Case(
        "protocol",
        "find",
        "What is the maintenance override code mentioned in the log?",
        "\n".join(lines),
        code,
        "token",
        lambda a, c=code: score_token(a, c),
        150_000,
    )
    lines = fit(log_lines(rng, 3000, ("INFO", "DEBUG", "WARN", "INFO", "INFO", "ERROR")), 100_000)
    errors = sum(1 for line in lines if " ERROR " in line)
    count = Case(
        "protocol",
        "count",
        "How many log lines have the level ERROR?",
        "\n".join(lines),
        errors,
        "number",
        lambda a, n=errors: score_number(a, n),
        100_000,
    )
    lines = fit(log_lines(rng, 4000), 120_000)
    badge = str(rng.randint(10000, 99999))
    room = f"{rng.randint(2, 9)}{rng.choice('ABCDEF')}"
    lines[int(len(lines) * 0.05)] = (
        lines[0].split("[")[0] + f"[badges] badge {badge} was issued to Marta Quist"
    )
    lines[int(len(lines) * 0.93)] = (
        lines[0].split("[")[0] + f"[doors] badge {badge} opened the door of room {room}"
    )
    join = Case(
        "protocol",
        "join",
        "Which room's door did Marta Quist's badge open?",
        "\n".join(lines),
        room,
        "token",
        lambda a, r=room: score_token(a, r),
        120_000,
    )
    return [find, count, join]


def _email() -> list[Case]:
    files = package_files("email")
    context, _ = join_corpus(files)
    where = [
        n
        for n, t in files.items()
        for d in ast.walk(ast.parse(t))
        if isinstance(d, ast.FunctionDef) and d.name == "_fold_mime_parameters"
    ]
    (file,) = where
    base = file.rsplit("/", 1)[-1]
    rivals = tuple({n.rsplit("/", 1)[-1] for n in files} - {base})
    defines = Case(
        "protocol",
        "email-where",
        "Which file defines `_fold_mime_parameters`?",
        context,
        file,
        "file",
        lambda a, b=base, r=rivals: score_token(a, b, r),
        len(context),
        files,
    )
    n = len(files)
    count = Case(
        "protocol",
        "email-files",
        "How many files are in the email package?",
        context,
        n,
        "number",
        lambda a, n=n: score_number(re.sub(r"`[^`]*`", "", a), n),
        len(context),
        files,
    )
    return [defines, count]


def make(seed: int = 7) -> list[Case]:
    """The five cases (seed 7 is the seed the issue's run used)."""
    return _logs(seed) + _email()
