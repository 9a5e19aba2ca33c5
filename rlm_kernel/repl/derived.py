"""Which of a run's variables hold values drawn from `context`: a static data flow over the root's blocks.

A name is *drawn from the context* when code assigns it from an expression that uses `context` (or `ctx`,
`context_files`, `context_N`), a tool of the run (the notebook author's function) or another drawn name —
`n = len(context)`, `hits = [l for l in context.splitlines() if ...]`, `a = llm_query(q + context[i:j])`,
`r = map_reduce(context, ...)` — or when it is assigned under a loop or a test over such values (`for line
in context.splitlines(): if ...: count += 1`), or changed by a method call given one
(`found.append(line)`). A name assigned a plain literal outside such a loop or test (`city = "Paris"`)
stops being drawn from the context. The root loop also adds the names a block assigns from a sub-call
that was given part of `context` (`rootloop.blocks`).

The FINAL gate (`repl.gate`) accepts a FINAL whose value comes from such a name: it is the code's own result
over the context, not the model's words. The analysis is static and conservative for literals: a value it
cannot follow is still accepted when code printed it (gate rule 3).
"""

from __future__ import annotations

import ast
import re

__all__ = ["CONTEXT_NAME", "DataFlow", "expr_names", "is_literal"]

CONTEXT_NAME = re.compile(r"^(?:context|ctx|context_files|context_\d+)$")


def is_literal(node: ast.AST) -> bool:
    """A constant, an f-string of constants, or a list/tuple/set/dict display of literals."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) for v in node.values)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is None or is_literal(k) for k in node.keys) and all(is_literal(v) for v in node.values)
    return False


def expr_names(node: ast.AST) -> set[str]:
    """The names an expression reads."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _targets(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Tuple | ast.List):
        return [name for elt in node.elts for name in _targets(elt)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    if isinstance(node, ast.Subscript | ast.Attribute):  # x[i] = ..., x.y = ...: x changes
        base = node.value
        while isinstance(base, ast.Subscript | ast.Attribute):
            base = base.value
        return [base.id] if isinstance(base, ast.Name) else []
    return []


class DataFlow:
    """The names drawn from the context so far in one run (kept across its blocks)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.sources: set[str] = set()
        """Other names whose values are evidence like the context: the run's tools (the notebook author's
        functions)."""

    def drawn(self, node: ast.AST | None) -> bool:
        """Whether an expression uses the context, a tool, or a name drawn from them."""
        if node is None:
            return False
        return any(CONTEXT_NAME.match(n) or n in self.names or n in self.sources for n in expr_names(node))

    def add_block(self, code: str) -> None:
        """Follow one block's assignments (twice over, so a loop's later lines feed its earlier ones)."""
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            return
        for _ in range(2):
            self._body(tree.body, False)

    def _assign(self, targets: list[str], value: ast.AST | None, under: bool) -> None:
        if under or self.drawn(value):
            self.names.update(targets)
        elif value is not None and is_literal(value):
            self.names.difference_update(targets)

    def _body(self, body: list[ast.stmt], under: bool) -> None:
        for stmt in body:
            self._stmt(stmt, under)

    def _stmt(self, stmt: ast.stmt, under: bool) -> None:
        if isinstance(stmt, ast.Assign):
            self._assign([n for t in stmt.targets for n in _targets(t)], stmt.value, under)
        elif isinstance(stmt, ast.AugAssign | ast.AnnAssign):
            self._assign(_targets(stmt.target), stmt.value, under or self.drawn(stmt.target))
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            inner = under or self.drawn(stmt.iter)
            if inner:
                self.names.update(_targets(stmt.target))
            self._body(stmt.body, inner)
            self._body(stmt.orelse, inner)
        elif isinstance(stmt, ast.While | ast.If):
            inner = under or self.drawn(stmt.test)
            self._body(stmt.body, inner)
            self._body(stmt.orelse, inner)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            self._body(stmt.body, under)
        elif isinstance(stmt, ast.Try):
            for part in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                self._body(part, under)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            return  # a function's result is drawn from what it is called with: see the call's assignment
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            args = [*stmt.value.args, *(k.value for k in stmt.value.keywords)]
            if isinstance(func, ast.Attribute) and (under or any(self.drawn(a) for a in args)):
                self.names.update(_targets(func.value))  # found.append(line), counts.update(words)
