"""Exact engine for Go, JavaScript and TypeScript: tree-sitter grammars and queries, under a time limit.

A parse that runs past its deadline is cancelled (progress_callback) and raises `ParseTimeout`.
"""

from __future__ import annotations

import threading
import time
from functools import cache

import tree_sitter as ts

from rlm_kernel.analysis.extract.common import collapse, record, sort_records

__all__ = ["ParseTimeout", "Parsed", "extract", "parse"]

_FN = "[(function_expression) (arrow_function) (generator_function)]"
# @decl: nodes that carry their own `name` field; @bound: function values bound to a name by their parent;
# @named: named function expressions (used when nothing binds them)
_JS_COMMON = f"""
(function_declaration name: (_)) @decl
(generator_function_declaration name: (_)) @decl
(method_definition name: (_)) @decl
(variable_declarator name: (identifier) value: {_FN} @bound)
(assignment_expression left: (identifier) right: {_FN} @bound)
(assignment_expression left: (member_expression property: (_)) right: {_FN} @bound)
(pair key: (_) value: {_FN} @bound)
(function_expression name: (identifier)) @named
(generator_function name: (identifier)) @named
"""
QUERIES = {
    "go": """
(function_declaration name: (identifier)) @decl
(method_declaration name: (field_identifier)) @decl
""",
    "javascript": _JS_COMMON + f"(field_definition property: (_) value: {_FN} @bound)\n",
    "typescript": _JS_COMMON
    + f"(public_field_definition name: (_) value: {_FN} @bound)\n"
    + """
(function_signature name: (identifier)) @decl
(class_body (method_signature name: (_)) @decl)
(abstract_method_signature name: (_)) @decl
""",
}
# the field of a binding node that holds the bound name
_BINDING_NAME = {
    "variable_declarator": "name",
    "assignment_expression": "left",
    "pair": "key",
    "field_definition": "property",
    "public_field_definition": "name",
}


# bytes handed to tree-sitter per read callback
_READ_CHUNK = 1 << 16


class ParseTimeout(Exception):
    """tree-sitter did not finish within its time limit."""


@cache
def _language(language: str) -> ts.Language:
    if language == "go":
        import tree_sitter_go as mod

        return ts.Language(mod.language())
    if language == "javascript":
        import tree_sitter_javascript as mod

        return ts.Language(mod.language())
    import tree_sitter_typescript as mod

    return ts.Language(mod.language_typescript())


@cache
def _query(language: str) -> ts.Query:
    return ts.Query(_language(language), QUERIES[language])


_local = threading.local()


def _parser(language: str) -> ts.Parser:
    parsers = _local.__dict__.setdefault("parsers", {})
    if language not in parsers:
        parsers[language] = ts.Parser(_language(language))
    return parsers[language]


class Parsed:
    """A finished parse: the tree and the UTF-8 source it was built from."""

    def __init__(self, tree: ts.Tree, source: bytes) -> None:
        self.tree = tree
        self.source = source

    @property
    def has_error(self) -> bool:
        return self.tree.root_node.has_error

    def error_line_spans(self) -> list[tuple[int, int]]:
        """1-based inclusive line spans of ERROR and MISSING nodes (where the grammar gave up)."""
        spans: list[tuple[int, int]] = []
        stack = [self.tree.root_node]
        while stack:
            node = stack.pop()
            if not node.has_error:
                continue
            if node.is_error or node.is_missing:
                spans.append((node.start_point[0] + 1, node.end_point[0] + 1))
                continue
            stack.extend(node.children)
        return spans


_WIDE_ERROR = 10_000
"""Tokens in one top-level ERROR node past which the query is not run (its cost is quadratic there)."""


def parse(text: str, language: str, seconds: float | None) -> Parsed:
    """Parse `text`; give up with ParseTimeout after `seconds` of parsing (None: no limit)."""
    source = text.encode("utf-8", "surrogatepass")
    parser = _parser(language)
    if seconds is None:
        return Parsed(parser.parse(source), source)
    deadline = (
        time.thread_time() + seconds
    )  # CPU time of this thread: a busy machine does not cut parses short

    def read(offset: int, _point: object) -> bytes:
        return source[offset : offset + _READ_CHUNK]

    def progress(_offset: int, _has_error: bool) -> bool:
        return time.thread_time() > deadline

    try:
        tree = parser.parse(read, progress_callback=progress)
    except ValueError:
        parser.reset()
        raise ParseTimeout(f"tree-sitter {language} parse exceeded {seconds:.2f} s") from None
    return Parsed(tree, source)


def extract(
    text: str, language: str, seconds: float | None = None, parsed: Parsed | None = None
) -> list[dict]:
    """Functions of `text` in `language` ("go", "javascript", "typescript")."""
    parsed = parsed or parse(text, language, seconds)
    src = parsed.source
    root = parsed.tree.root_node
    # tree-sitter's query walk is quadratic in the children of one node, and an ERROR node at the top holds
    # every unmatched token (400 000 `}`: 0.05 s at 100 000, 0.5 s at 400 000); no code is inside such a
    # node, so the text is refused as too far from valid (engine="auto" takes the linear engine's finds)
    wide = next(
        (c.child_count for c in root.children if c.type == "ERROR" and c.child_count > _WIDE_ERROR), 0
    )
    if wide:
        raise ParseTimeout(f"tree-sitter {language}: an error region of {wide:,} tokens")
    caps = ts.QueryCursor(_query(language)).captures(root)
    out = []
    seen: set[tuple[int, int]] = set()
    for fn in caps.get("decl", ()):
        name = fn.child_by_field_name("name")
        if name is not None:
            seen.add((fn.start_byte, fn.end_byte))
            out.append(_record(src, fn, fn, name))
    for fn in caps.get("bound", ()):
        binder = fn.parent
        name = binder.child_by_field_name(_BINDING_NAME[binder.type])
        if name is not None and name.type == "member_expression":
            name = name.child_by_field_name("property")
        if name is not None:
            seen.add((fn.start_byte, fn.end_byte))
            out.append(_record(src, fn, binder, name))
    for fn in caps.get("named", ()):
        if (fn.start_byte, fn.end_byte) not in seen:
            name = fn.child_by_field_name("name")
            if name is not None:
                out.append(_record(src, fn, fn, name))
    return sort_records(out)


def _record(src: bytes, fn: ts.Node, def_node: ts.Node, name_node: ts.Node) -> dict:
    name = src[name_node.start_byte : name_node.end_byte].decode("utf-8", "replace")
    if name_node.type in ("string", "template_string") and len(name) >= 2:
        name = name[1:-1]
    line_start = name_node.start_byte - name_node.start_point[1]  # the column is in bytes
    sig_start = max(line_start, def_node.start_byte)
    if def_node.type in ("method_definition", "public_field_definition", "field_definition"):
        for child in def_node.children:  # decorators are not part of the signature
            if child.type == "decorator":
                sig_start = max(sig_start, child.end_byte)
    body = fn.child_by_field_name("body")
    sig_end = body.start_byte if body is not None else fn.end_byte
    if sig_end < sig_start:
        sig_end = fn.end_byte
    signature = collapse(src[sig_start:sig_end].decode("utf-8", "replace"))
    return record(name, signature, name_node.start_point[0] + 1, fn.end_point[0] + 1)
