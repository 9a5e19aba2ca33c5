"""Exact Python engine: every `def`/`async def` from the standard library's `ast`.

Raises SyntaxError (or RecursionError/MemoryError on pathological nesting); the dispatcher then falls back.
"""

from __future__ import annotations

import ast

from rlm_kernel.analysis.extract.common import LineIndex, python_signature, record, sort_records

__all__ = ["extract"]


def extract(text: str) -> list[dict]:
    """Functions, methods and nested functions of `text` (newlines already normalised to `\\n`)."""
    tree = ast.parse(text.replace("\x00", " "))
    lines = LineIndex(text)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            line_start = lines.start(node.lineno)
            line_end = text.find("\n", line_start)
            line = text[line_start : len(text) if line_end == -1 else line_end]
            col = node.col_offset
            if not line.isascii():  # col_offset counts UTF-8 bytes
                col = len(line.encode("utf-8")[:col].decode("utf-8", "replace"))
            sig = python_signature(text, line_start + col)
            out.append(record(node.name, sig, node.lineno, node.end_lineno or node.lineno))
    return sort_records(out)
