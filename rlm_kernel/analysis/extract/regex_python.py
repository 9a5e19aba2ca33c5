"""Regex engine for Python: `def` lines over masked text, bodies by indentation.

Continuation lines (open brackets, multi-line strings, backslashes) never end a body.
"""

from __future__ import annotations

import re

from rlm_kernel.analysis.extract.common import LineIndex, python_header_text, record, sort_records
from rlm_kernel.analysis.extract.masking import mask_python

__all__ = ["extract_python"]


_PY_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_PY_STATEMENT = re.compile(r"[ \t]*(?:async[ \t]+def|def|class)[ \t]+\w+[ \t]*[(:]")
_ONLY_BRACKETS = {c: None for c in range(128) if chr(c) not in "()[]{}\n\\"}


def _indent(line: str) -> int:
    width = 0
    for c in line:
        if c == " ":
            width += 1
        elif c == "\t":
            width = width // 8 * 8 + 8
        elif c == "\x0c":
            width = 0
        else:
            break
    return width


def extract_python(text: str) -> list[dict]:
    masked, multi = mask_python(text)
    lines = masked.split("\n")
    n = len(lines)
    # cont[i]: line i (0-based) starts inside brackets, a multi-line string or after a backslash
    cont = [False] * n
    depth = 0
    skeleton = (
        masked.translate(_ONLY_BRACKETS).split("\n")
        if masked.isascii()
        else ["".join(c for c in line if c in "()[]{}\\") for line in lines]
    )
    for i, sk in enumerate(skeleton):
        if depth > 0:
            if _PY_STATEMENT.match(lines[i]):
                depth = 0  # a def/class line cannot sit inside brackets: the brackets were never closed
            else:
                cont[i] = True
        if sk:
            # sk holds only brackets and backslashes: openers = len - closers - backslashes
            backslashes = sk.count("\\")
            delta = len(sk) - backslashes - 2 * (sk.count(")") + sk.count("]") + sk.count("}"))
            depth = max(0, depth + delta)
            if backslashes and i + 1 < n and lines[i].rstrip(" \t").endswith("\\"):
                cont[i + 1] = True
    if multi:
        index = LineIndex(masked)
        for start, end in multi:
            for i in range(index.line(start), min(n, index.line(end))):
                cont[i] = True
    blank = [not line.strip() for line in lines]
    index = LineIndex(masked)
    # logical_end[i]: where the logical line holding row i ends (the next row that is not a continuation);
    # a header is searched no further, so unclosed headers cost their own line, not the rest of the text
    logical_end = [len(masked)] * n
    nxt = len(masked)
    for i in range(n - 1, -1, -1):
        logical_end[i] = nxt
        if not cont[i]:
            nxt = index.starts[i]
    out = []
    for m in _PY_DEF.finditer(masked):
        row = index.line(m.start()) - 1
        if cont[row]:
            continue
        def_pos = m.start() + len(m.group(1))
        indent = _indent(m.group(1))
        header_end = _header_end(masked, def_pos, logical_end[row])
        if (
            header_end == -1
            or (hrow := index.line(header_end) - 1) > row
            and any(not cont[k] for k in range(row + 1, hrow + 1))
        ):
            # the header never closes: take the def line as the header, the indented block as the body
            header_end = masked.find("\n", def_pos)
            header_end = len(masked) if header_end == -1 else header_end
            hrow = row
        end_row = hrow
        rest = masked[header_end : masked.find("\n", header_end) if hrow + 1 < n else len(masked)]
        if rest.strip():  # body on the header line: it ends where that logical line ends
            j = hrow + 1
            while j < n and cont[j]:
                if not blank[j]:
                    end_row = j
                j += 1
        else:
            j = hrow + 1
            while j < n:
                if blank[j]:
                    j += 1
                    continue
                if not cont[j] and _indent(lines[j]) <= indent:
                    break
                end_row = j
                j += 1
        # masking keeps offsets, so the header found in the masked text spans the same characters of `text`
        sig = python_header_text(text, def_pos, header_end)
        out.append(record(m.group(2), sig, row + 1, end_row + 1))
    return sort_records(out)


def _header_end(masked: str, pos: int, end: int) -> int:
    """Just past the `:` closing a def header in masked text (strings/comments already blanked) before
    `end`, or -1."""
    end = min(end, pos + 20_000)
    find = masked.find
    if find(")", pos, end) == find("]", pos, end) == find("}", pos, end) == -1:
        # no closing bracket (an unclosed header): depth only grows, so only a colon before the first
        # opening bracket can end the header
        opens = [i for i in (find("(", pos, end), find("[", pos, end), find("{", pos, end)) if i != -1]
        colon = find(":", pos, min(opens) if opens else end)
        return -1 if colon == -1 else colon + 1
    depth = 0
    for m in _HEADER.finditer(masked, pos, end):
        c = m.group()
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            return m.end()
    return -1


_HEADER = re.compile(r"[()\[\]{}:]")
