"""Regex engine for Go: line-anchored `func` declarations (with receivers), bodies by brace matching.

Also home of two small text helpers shared with the JavaScript engine.
"""

from __future__ import annotations

import re

from rlm_kernel.analysis.extract.brackets import Brackets
from rlm_kernel.analysis.extract.common import LineIndex, collapse, record, sort_records
from rlm_kernel.analysis.extract.masking import mask_go

__all__ = ["eol", "extract_go", "skip_spaces"]


_GO_FUNC = re.compile(
    r"^func[ \t]*(?:\((?P<recv>[^()\n]*(?:\([^()\n]*\)[^()\n]*)*)\)[ \t]*)?(?P<name>[A-Za-z_]\w*)[ \t]*"
    r"(?:\[[^\n]*?\][ \t]*)?\(",
    re.MULTILINE,
)


def extract_go(text: str) -> list[dict]:
    masked = mask_go(text)
    br = Brackets(masked)
    index = LineIndex(masked)
    out = []
    for m in _GO_FUNC.finditer(masked):
        start_line = index.line(m.start())
        open_paren = m.end() - 1
        close = br.close_of.get(open_paren)
        if close is None:
            out.append(
                record(
                    m.group("name"),
                    collapse(text[m.start() : eol(masked, m.start())]),
                    start_line,
                    start_line,
                )
            )
            continue
        after = close + 1
        # a parenthesised result list may span lines
        k = skip_spaces(masked, after)
        if k < len(masked) and masked[k] == "(" and k in br.close_of:
            after = br.close_of[k] + 1
        line_end = eol(masked, after)
        tail = masked[after:line_end].rstrip()
        body = after + len(tail) - 1 if tail.endswith("{") else -1
        if body >= 0 and body in br.close_of:
            sig = collapse(text[m.start() : body])
            out.append(record(m.group("name"), sig, start_line, index.line(br.close_of[body])))
        else:
            end = body if body >= 0 else line_end
            out.append(
                record(
                    m.group("name"),
                    collapse(text[m.start() : end]),
                    start_line,
                    index.line(max(m.start(), line_end - 1)) if body < 0 else index.line(len(masked) - 1),
                )
            )
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
