"""The hint for a search with many hits over a corpus one of whose files is named after the searched word:
ask a sub-model the question with that file's text, as a block to copy.

Measured with the coder model (tutorial 5, "Which exception does a bare `raise` (no expression) raise when no
exception is being handled?" over 79 files of the Python reference, 2026-12-07): its first block searched the
lines for 'raise' (214 hits) and it re-ran that block to the turn limit, though `raise.txt` holds the answer.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath
from typing import Any

from rlm_kernel.repl.asked import asked_words
from rlm_kernel.rootloop.prompt import COMMON_WORDS, chunk_chars
from rlm_kernel.rootloop.textcut import truncate
from rlm_kernel.rootloop.trajectory import Turn

__all__ = ["MANY_HITS", "named_file", "named_file_hint", "names_a_file"]

MANY_HITS = 5
"""Hits from which a search's lines are too many to answer from: the hint points at a file instead."""
_PARTS = re.compile(r"[-_.\s]+")
_FILE_NOUNS = frozenset({"file", "files", "module", "modules"})


def _searched(code: str) -> list[str]:
    """The one-word string literals of `code` (the words it searched for), lower case, in order."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    words: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            word = node.value.strip().lower()
            if re.fullmatch(r"[a-z_][a-z0-9_]{2,}", word) and word not in COMMON_WORDS and word not in words:
                words.append(word)
    return words


def named_file(files: list[str], words: list[str]) -> tuple[str, str] | None:
    """(path, word): the one file whose name (without its suffix) is one of `words`, else the one file whose
    name has one of them as a part (`raise-statement.txt`); None when there is none or more than one."""
    stems = {path: PurePosixPath(path).stem.lower() for path in files}
    for word in words:
        exact = [path for path, stem in stems.items() if stem == word]
        if len(exact) == 1:
            return exact[0], word
    for word in words:
        parts = [path for path, stem in stems.items() if word in _PARTS.split(stem)]
        if len(parts) == 1:
            return parts[0], word
    return None


def names_a_file(question: str, files: list[str]) -> bool:
    """Whether the question names one of `files` by its path or its file name (`email/base64mime.py`,
    `base64mime.py`). Measured with the hint follower (code/32K-default-3, "... `encode` in
    `email/_encoded_words.py`?"): a search for 'charset' was pointed at `email/charset.py`, whose sub-model
    answer `NONE` was accepted."""
    low = question.lower()
    return any(path.lower() in low or PurePosixPath(path).name.lower() in low for path in files)


def _many_hits(stdout: str) -> bool:
    lines = [line for line in stdout.splitlines() if line.strip()]
    first = lines[0].strip() if lines else ""
    return (first.isdigit() and int(first) >= MANY_HITS) or len(lines) >= MANY_HITS


def named_file_hint(run: Any, turn: Turn, window: int) -> str:
    """The block that asks a sub-model the run's question with the text of the file named after the turn's
    searched word, for a turn whose search printed many hits and called no model ("" otherwise)."""
    spans = dict(run.loaded.files)
    if not spans or turn.error or turn.calls or not turn.code or not _many_hits(turn.stdout):
        return ""
    if names_a_file(run.question, list(spans)):
        return ""  # the question says which file: another one named after a word of it is a detour
    if _FILE_NOUNS.intersection(asked_words(run.question)):
        return (
            ""  # "which file ...": a file's text does not say its own name (hint follower, code/128K-where-0)
        )
    question_words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", run.question)}
    words = [w for w in _searched(turn.code) if w in question_words]
    found = named_file(list(spans), words)
    if found is None or found[0] in turn.code:
        return ""
    path, word = found
    start, end = spans[path]
    size = chunk_chars(window)
    cut = end - start > size
    text = f"context[start:start + {size}]" if cut else "context[start:end]"
    ask = truncate(run.question, 300) + "\n\nAnswer from this text:\n"
    block = f"start, end = context_files[{path!r}]\nreply = llm_query({ask!r} + {text})\nprint(reply)"
    part = " (its first part: the file is longer than one call reads)" if cut else ""
    return (
        f"Your search found many lines. The file {path!r} is named after {word!r}: ask a sub-model the "
        f"question with that file's text{part} — reply with:\n```repl\n{block}\n```"
    )
