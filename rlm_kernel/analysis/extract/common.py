"""Shared pieces of the extraction engines: the result record, line arithmetic, Python header scanning.

Lines end at `\\n`, `\\r\\n` or a lone `\\r`; engines work on text with line ends normalised to `\\n`.
"""

from __future__ import annotations

import bisect
import re

from rlm_kernel.analysis.newlines import newline_starts

__all__ = [
    "MAX_SIGNATURE",
    "LineIndex",
    "collapse",
    "normalise_newlines",
    "python_header_end",
    "python_header_text",
    "python_signature",
    "record",
    "sort_records",
]

MAX_SIGNATURE = 300
_WS = re.compile(r"\s+")
_NEWLINES = re.compile(r"\r\n?")


def normalise_newlines(content: str) -> str:
    """`\\r\\n` and lone `\\r` become `\\n`, so every engine counts lines the same way."""
    return _NEWLINES.sub("\n", content) if "\r" in content else content


def collapse(text: str) -> str:
    """Whitespace runs to one space, trimmed, capped at MAX_SIGNATURE characters."""
    out = _WS.sub(" ", text).strip()
    return out if len(out) <= MAX_SIGNATURE else out[: MAX_SIGNATURE - 1] + "…"


def record(name: str, signature: str, start_line: int, end_line: int) -> dict:
    """One result: plain dict with the four keys of SPEC-01.15 (lines 1-based, inclusive)."""
    return {
        "name": name,
        "signature": signature,
        "start_line": start_line,
        "end_line": max(start_line, end_line),
    }


def sort_records(records: list[dict]) -> list[dict]:
    """Sorted by start line, outer definitions before inner ones on the same line; duplicates dropped."""
    seen = set()
    out = []
    for r in sorted(records, key=lambda r: (r["start_line"], -r["end_line"], r["name"])):
        key = (r["name"], r["start_line"], r["end_line"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


class LineIndex:
    """Offset -> 1-based line number for a `\\n`-separated text."""

    def __init__(self, text: str) -> None:
        self.starts = newline_starts(text)

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def start(self, line: int) -> int:
        """Offset where 1-based `line` begins."""
        return self.starts[line - 1]

    def __len__(self) -> int:
        return len(self.starts)


_HEADER_TOKEN = re.compile(r"""[()\[\]{}:#\n]|[rRbBuUfF]{0,2}(?:'''|\"\"\"|'|")""")


def python_header_end(text: str, pos: int, limit: int = 20_000) -> int:
    """Offset just past the `:` that ends the def header at `pos` (brackets, strings, comments skipped).

    Returns -1 when no such colon is found within `limit` characters.
    """
    depth = 0
    end = min(len(text), pos + limit)
    i = pos
    while i < end:
        m = _HEADER_TOKEN.search(text, i, end)
        if m is None:
            return -1
        tok = m.group()
        i = m.end()
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth = max(0, depth - 1)
        elif tok == ":":
            if depth == 0:
                return i
        elif tok == "#":
            nl = text.find("\n", i, end)
            i = end if nl == -1 else nl
        elif tok == "\n":
            continue
        else:
            quote = tok.lstrip("rRbBuUfF")
            close = text.find(quote, i, end) if len(quote) == 3 else _close_single(text, i, end, quote)
            if close == -1:
                return -1
            i = close + len(quote)
    return -1


def _close_single(text: str, i: int, end: int, quote: str) -> int:
    while i < end:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i
        if c == "\n":
            return -1
        i += 1
    return -1


def python_signature(text: str, def_pos: int, limit: int = 20_000) -> str:
    """The collapsed header text from `def`/`async def` through its `:`, comments removed.

    The `:` is searched for at most `limit` characters (a caller that knows where the logical line ends
    passes that, keeping unclosed headers from costing more than their own line)."""
    end = python_header_end(text, def_pos, max(1, limit))
    if end == -1:
        nl = text.find("\n", def_pos)
        end = len(text) if nl == -1 else nl
    return python_header_text(text, def_pos, end)


def python_header_text(text: str, def_pos: int, end: int) -> str:
    """The collapsed text of a def header known to span [def_pos, end), comments removed."""
    header = text[def_pos:end]
    if "#" in header:
        header = "\n".join(_strip_comment(line) for line in header.split("\n"))
    return collapse(header)


def _strip_comment(line: str) -> str:
    # only called for multi-line headers; a '#' inside a string default is rare enough to accept
    idx = line.find("#")
    return line if idx == -1 else line[:idx]
