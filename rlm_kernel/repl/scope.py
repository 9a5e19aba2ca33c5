"""The file a counting question is about, and whether code's values were computed over that file's text.

Measured with the coder model (long-context AFTER run, 2026-12-06, code/32K-count-1): for "How many
top-level functions does `email/_encoded_words.py` define?" the root computed
`len(extract_functions(context))` over the whole corpus of 8 files (43; the file defines 8) and FINAL(43) was
accepted: a count drawn from `context`, but over the wrong text. A count for a question that names one file
of the corpus must be computed over that file's text.

A value is *scoped* when code derives it (the same data flow as `repl.derived`) from an expression that
takes one file's part of `context`: `context_files[...]`, or a string naming the file (its path, or its base
name) used anywhere but as a `'path' in line` test — `context.find('=== a/b.py ===')`, `line == '=== a/b.py
==='`, `text.split('a/b.py')`. A filter for the lines that mention the path only finds the marker line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from rlm_kernel.repl.derived import DataFlow

__all__ = ["ScopeFlow", "scope_file"]


def scope_file(question: str, files: Iterable[str]) -> str | None:
    """The corpus file the question names (its path, or a base name no other file has), longest first."""
    paths = sorted(files, key=len, reverse=True)
    for path in paths:
        if re.search(r"(?<![\w/.-])" + re.escape(path) + r"(?![\w/-])", question):
            return path
    names: dict[str, list[str]] = {}
    for path in paths:
        names.setdefault(PurePosixPath(path).name, []).append(path)
    for name, owners in sorted(names.items(), key=lambda kv: -len(kv[0])):
        named = re.search(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])", question)
        if len(owners) == 1 and "." in name and named:
            return owners[0]
    return None


def _mentions(node: ast.AST) -> list[ast.Constant]:
    """The string constants of an expression that are not the left side of an `in` / `not in` test."""
    tested = {
        id(n.left)
        for n in ast.walk(node)
        if isinstance(n, ast.Compare) and isinstance(n.ops[0], ast.In | ast.NotIn)
    }
    return [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in tested
    ]


def _is_files(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "context_files"


class ScopeFlow(DataFlow):
    """The names computed over one file's part of `context` so far in a run (kept across its blocks)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.base = PurePosixPath(path).name

    def _seed(self, node: ast.AST) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Subscript) and _is_files(n.value):
                return True
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "get"
                and _is_files(n.func.value)
            ):
                return True
        return any(self.path in c.value or self.base in c.value for c in _mentions(node))

    def drawn(self, node: ast.AST | None) -> bool:
        """Whether an expression takes the file's part of `context`, or uses a name computed from it."""
        if node is None:
            return False
        return self._seed(node) or any(isinstance(n, ast.Name) and n.id in self.names for n in ast.walk(node))

    def block_scoped(self, code: str) -> bool:
        """Whether a block works on the file's part of `context` (its output then counts for the file)."""
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            return False
        return any(self.drawn(stmt) for stmt in tree.body)
