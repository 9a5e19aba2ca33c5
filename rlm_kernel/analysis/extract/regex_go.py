"""Regex engine for Go: line-anchored `func` declarations (with receivers), bodies by brace matching.

Also home of two small text helpers shared with the JavaScript engine.
"""

from __future__ import annotations

import re

from rlm_kernel.analysis.extract.brackets import Brackets
from rlm_kernel.analysis.extract.common import LineIndex, collapse, record, sort_records
from rlm_kernel.analysis.extract.masking import mask_go

__all__ = ["eol", "extract_go", "skip_spaces"]


_GO_FUNC = re.compile(r"^func\b[ \t]*", re.MULTILINE)
_GO_NAME = re.compile(r"\s*(?P<name>[^\W\d]\w*)[ \t]*")


def _signature_open(masked: str, br: Brackets, pos: int) -> tuple[str, int, int] | None:
    """After `func `: skip a receiver `(...)`, read the name, skip type parameters `[...]`.

    Returns (name, offset of the name, offset of the parameter list's `(`), or None if this is no
    declaration (e.g. a function literal type). Brackets are matched, so receivers and type parameters
    may nest and span lines.
    """
    if pos < len(masked) and masked[pos] == "(":
        close = br.close_of.get(pos)
        if close is None:
            return None
        pos = close + 1
    m = _GO_NAME.match(masked, pos)
    if m is None:
        return None
    pos = m.end()
    if pos < len(masked) and masked[pos] == "[":
        close = br.close_of.get(pos)
        if close is None:
            return None
        pos = skip_spaces(masked, close + 1)
    if pos < len(masked) and masked[pos] == "(":
        return m.group("name"), m.start("name"), pos
    return None


def extract_go(text: str) -> list[dict]:
    """Functions and methods of Go source (newlines normalised to `\\n`)."""
    masked = mask_go(text)
    br = Brackets(masked)
    index = LineIndex(masked)
    out = []
    for f in _GO_FUNC.finditer(masked):
        found = _signature_open(masked, br, f.end())
        if found is None:
            continue
        name, name_pos, open_paren = found
        start, start_line = f.start(), index.line(name_pos)
        close = br.close_of.get(open_paren)
        if close is None:  # unclosed parameter list: the header line only
            out.append(record(name, collapse(text[start : eol(masked, start)]), start_line, start_line))
            continue
        after = close + 1
        k = skip_spaces(masked, after)
        if k < len(masked) and masked[k] == "(" and k in br.close_of:
            after = br.close_of[k] + 1  # a parenthesised result list, possibly over several lines
        line_end = eol(masked, after)
        tail = masked[after:line_end].rstrip()
        body = after + len(tail) - 1 if tail.endswith("{") else -1
        if body < 0:  # no body (assembly stub): the header is the whole declaration
            end_line = index.line(max(start, line_end - 1))
            out.append(record(name, collapse(text[start:line_end]), start_line, end_line))
            continue
        body_close = br.close_of.get(body)
        end_line = index.line(body_close) if body_close is not None else index.line(len(masked) - 1)
        out.append(record(name, collapse(text[start:body]), start_line, end_line))
    return sort_records(out)


def eol(text: str, pos: int) -> int:
    """Offset of the newline ending the line that holds `pos` (or the text's length)."""
    nl = text.find("\n", pos)
    return len(text) if nl == -1 else nl


def skip_spaces(text: str, pos: int) -> int:
    """First offset at or after `pos` that is not a space, tab or newline."""
    n = len(text)
    while pos < n and text[pos] in " \t\n":
        pos += 1
    return pos
