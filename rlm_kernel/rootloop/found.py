"""What a block's short output shows for the question: the printed line that best matches it, the corpus files
those lines are in, and the next thing to search for when the line is only a step (a multi-hop question).

Used by the feedback's hints (`rootloop.feedback`), so that every example they show is built from this run's
own output — a line it printed, a file of its corpus, a number it gave — never a placeholder to copy.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from rlm_kernel.repl.asked import asked_words, names_asked_thing
from rlm_kernel.rootloop.prompt import COMMON_WORDS

__all__ = [
    "best_line",
    "candidates",
    "defining_lines",
    "enclosing_classes",
    "files_of",
    "next_key",
    "shape",
    "wants_file",
]

_MIN_LOCATED = 12
_DATE_OR_TIME = re.compile(r"^\d{4}-\d\d-\d\d|^\d\d?:\d\d")
_TOKEN = re.compile(r"[A-Za-z0-9][\w.-]*[A-Za-z0-9]|\w")


def candidates(printed: str) -> list[str]:
    """The output's lines, and the strings inside a printed list or tuple (`print(hits[:10])`), in order."""
    out: list[str] = []
    for line in printed.splitlines():
        text = line.strip()
        if not text:
            continue
        if text[0] in "[(":
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                value = None
            if isinstance(value, list | tuple):
                out += [v.strip() for v in value if isinstance(v, str) and v.strip()]
                continue
        out.append(text)
    return out


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w{3,}", text)} - COMMON_WORDS


def best_line(question: str, lines: list[str]) -> str | None:
    """The line sharing the most words with the question, a line naming what it asks for first (the first of
    equals), or None if none shares one. A bare number (a count of hits) is never the best line."""
    asked = _words(question)
    best, score = None, (False, 0)
    for line in lines:
        if re.fullmatch(r"[\d,.\s]+", line):
            continue
        shared = len(_words(line) & asked)
        rank = (shared > 0 and names_asked_thing(line, question), shared)
        if shared and rank > score:
            best, score = line, rank
    return best


def files_of(lines: list[str], context: str, spans: Mapping[str, tuple[int, int]]) -> list[str]:
    """The corpus files whose text holds the given printed lines (each found by its first occurrence), in
    order of first appearance; lines shorter than a few words are not located."""
    found: list[str] = []
    for line in lines:
        if len(line) < _MIN_LOCATED:
            continue
        at = context.find(line)
        if at < 0:
            continue
        for path, (start, end) in spans.items():
            if start <= at < end:
                if path not in found:
                    found.append(path)
                break
    return found


_MAX_PLACES = 20
_MAX_UP = 3000
"""Lines walked up from a printed line to the `class` line it belongs to, at most."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _class_above(context: str, pos: int) -> str | None:
    """The `class` line the line starting at `pos` of `context` lies in: walking up, each line indented less
    than the last one kept is its block's header; the first such header that is a `class` line (None at a
    line of no indentation that is not one, at a corpus file's `=== path ===` marker, or after _MAX_UP)."""
    end = context.find("\n", pos)
    level = _indent(context[pos : end if end >= 0 else len(context)])
    stop = pos
    for _ in range(_MAX_UP):
        if stop <= 0 or level == 0:
            return None
        start = context.rfind("\n", 0, stop - 1) + 1
        line = context[start : stop - 1] if context[stop - 1] == "\n" else context[start:stop]
        stop = start
        if not line.strip():
            continue
        if line.startswith("=== ") and line.rstrip().endswith(" ==="):
            return None
        if _indent(line) < level:
            if line.lstrip().startswith("class "):
                return line.strip()
            level = _indent(line)
    return None


def enclosing_classes(lines: list[str], context: str) -> list[str]:
    """The `class` lines of `context` that the printed lines lie in (every place each is a whole line of
    `context`, at most _MAX_PLACES each), in order, each once: where a printed `def` line is, its class."""
    found: list[str] = []
    for line in lines:
        text = line.strip()
        if len(text) < _MIN_LOCATED:
            continue
        pattern = re.compile(r"^[ \t]*" + re.escape(text) + r"[ \t]*$", re.M)
        for k, m in enumerate(pattern.finditer(context)):
            if k >= _MAX_PLACES:
                break
            header = _class_above(context, m.start())
            if header is not None and header not in found:
                found.append(header)
    return found


_NAMES_AND_NUMBERS = re.compile(r"\b(?:[A-Z][\w-]*|\d[\w-]*)\b")


def shape(line: str) -> str:
    """A line with its names and numbers blanked ("X X has joined the X project team."): lines of one shape
    are facts of one kind, so a line shaped like a chain's earlier hop is that hop's sibling (another person
    on the same project), not the chain's next hop."""
    return _NAMES_AND_NUMBERS.sub("X", line.strip())


_QUOTED = re.compile(r"`([A-Za-z_][\w.]*)`")


def defining_lines(lines: list[str], question: str) -> list[str]:
    """The printed lines that define a name the question quotes (`class X`, `def X`, `X = ...` at the start
    of a line): in a search's hits, the line that answers "which file defines `X`" among its uses."""
    names = {n.rsplit(".", 1)[-1] for n in _QUOTED.findall(question or "")}
    out = []
    for line in lines:
        m = re.match(r"\s*(?:async\s+def|def|class)\s+(\w+)|([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)", line)
        if m is not None and (m.group(1) or m.group(2)) in names:
            out.append(line)
    return out


def wants_file(question: str) -> bool:
    """Whether the question asks which file (or module, path) something is in."""
    return any(w in ("file", "files", "module", "path") for w in asked_words(question))


def next_key(line: str, question: str, searched: tuple[str, ...] = ()) -> str | None:
    """What to search for next when `line` is a step (it does not name what the question asks for): a number
    or code it gave that the question does not have (not a date or time), else a capitalised name; None when
    the line names the asked thing or has nothing new. Keys already `searched` are not given again (a
    chain's next hop prints the line of the hop before it too)."""
    if names_asked_thing(line, question):
        return None
    asked = {w.lower() for w in _TOKEN.findall(question)} | {k.lower() for k in searched}
    tokens = [t for t in _TOKEN.findall(line) if t.lower() not in asked]
    for token in tokens:
        if any(c.isdigit() for c in token) and len(token) >= 3 and not _DATE_OR_TIME.match(token):
            return token
    for token in tokens[1:] if line[:1].isupper() and tokens and line.startswith(tokens[0]) else tokens:
        plain = token.lower() not in COMMON_WORDS and not token.isupper()
        if token[0].isupper() and len(token) >= 3 and plain:
            return token
    return None
