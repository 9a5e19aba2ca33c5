"""Regex engine (SPEC-01.16): line-anchored patterns per language over masked text, linear bracket matching.

Never raises on odd input and never goes quadratic: brackets are paired once with stacks, lookups are dicts.
"""

from __future__ import annotations

import bisect
import re

from rlm_kernel.analysis.extract.common import (
    LineIndex,
    collapse,
    python_signature,
    record,
    sort_records,
)
from rlm_kernel.analysis.extract.masking import mask_go, mask_javascript, mask_python

__all__ = ["Brackets", "extract"]


def extract(text: str, language: str) -> list[dict]:
    """Functions of `text` (newlines normalised to `\\n`) in "python", "go", "javascript" or "typescript"."""
    if language == "python":
        return _python(text)
    if language == "go":
        return _go(text)
    return _JsExtractor(text, typescript=language == "typescript").run()


class Brackets:
    """Every (), [] and {} pair of a masked text, found in one pass with one stack per kind."""

    def __init__(self, masked: str) -> None:
        self.close_of: dict[int, int] = {}
        self.open_of: dict[int, int] = {}
        self.opens: list[int] = []  # every opening bracket, in text order
        self.parent: dict[int, int] = {}  # opening bracket -> innermost bracket open around it (-1: none)
        stacks: dict[str, list[int]] = {"(": [], "[": [], "{": []}
        pairs = {")": "(", "]": "[", "}": "{"}
        inner = -1  # innermost currently open bracket of any kind
        for m in _BRACKET.finditer(masked):
            c = m.group()
            pos = m.start()
            if c in stacks:
                self.parent[pos] = inner
                self.opens.append(pos)
                stacks[c].append(pos)
                inner = pos
            else:
                stack = stacks[pairs[c]]
                if stack:
                    opened = stack.pop()
                    self.close_of[opened] = pos
                    self.open_of[pos] = opened
                    if opened == inner:
                        inner = self._innermost_open(opened)

    def _innermost_open(self, closed: int) -> int:
        b = self.parent[closed]
        while b != -1 and b in self.close_of:
            b = self.parent[b]
        return b

    def enclosing(self, pos: int) -> int:
        """Offset of the innermost bracket ((, [ or {) open around `pos`, or -1."""
        i = bisect.bisect_left(self.opens, pos) - 1
        b = self.opens[i] if i >= 0 else -1
        while b != -1:
            close = self.close_of.get(b)
            if close is None or close > pos:
                return b
            b = self.parent[b]
        return -1


_BRACKET = re.compile(r"[()\[\]{}]")


# --- Python -------------------------------------------------------------------------------------------------
_PY_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
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


def _python(text: str) -> list[dict]:
    masked, multi = mask_python(text)
    lines = masked.split("\n")
    n = len(lines)
    # cont[i]: line i (0-based) starts inside brackets, a multi-line string or after a backslash
    cont = [False] * n
    depth = 0
    skeleton = masked.translate(_ONLY_BRACKETS).split("\n") if masked.isascii() else [
        "".join(c for c in line if c in "()[]{}\\") for line in lines
    ]
    for i, sk in enumerate(skeleton):
        if depth > 0:
            cont[i] = True
        if sk:
            depth = max(0, depth + sk.count("(") + sk.count("[") + sk.count("{") - sk.count(")") - sk.count("]")
                        - sk.count("}"))
            if i + 1 < n and lines[i].rstrip(" \t").endswith("\\"):
                cont[i + 1] = True
    if multi:
        index = LineIndex(masked)
        for start, end in multi:
            for i in range(index.line(start), min(n, index.line(end))):
                cont[i] = True
    blank = [not line.strip() for line in lines]
    index = LineIndex(masked)
    out = []
    for m in _PY_DEF.finditer(masked):
        row = index.line(m.start()) - 1
        if cont[row]:
            continue
        def_pos = m.start() + len(m.group(1))
        indent = _indent(m.group(1))
        header_end = _header_end(masked, def_pos)
        end_row = row
        if header_end == -1:
            out.append(record(m.group(2), python_signature(text, def_pos), row + 1, row + 1))
            continue
        hrow = index.line(header_end) - 1
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
        out.append(record(m.group(2), python_signature(text, def_pos), row + 1, end_row + 1))
    return sort_records(out)


def _header_end(masked: str, pos: int) -> int:
    """Just past the `:` closing a def header in masked text (strings/comments already blanked), or -1."""
    depth = 0
    for m in _HEADER.finditer(masked, pos, min(len(masked), pos + 20_000)):
        c = m.group()
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            return m.end()
    return -1


_HEADER = re.compile(r"[()\[\]{}:]")


# --- Go -----------------------------------------------------------------------------------------------------
_GO_FUNC = re.compile(
    r"^func[ \t]*(?:\((?P<recv>[^()\n]*(?:\([^()\n]*\)[^()\n]*)*)\)[ \t]*)?(?P<name>[A-Za-z_]\w*)[ \t]*"
    r"(?:\[[^\n]*?\][ \t]*)?\(",
    re.MULTILINE,
)


def _go(text: str) -> list[dict]:
    masked = mask_go(text)
    br = Brackets(masked)
    index = LineIndex(masked)
    out = []
    for m in _GO_FUNC.finditer(masked):
        start_line = index.line(m.start())
        open_paren = m.end() - 1
        close = br.close_of.get(open_paren)
        if close is None:
            out.append(record(m.group("name"), collapse(text[m.start() : _eol(masked, m.start())]), start_line, start_line))
            continue
        after = close + 1
        # a parenthesised result list may span lines
        k = _skip_spaces(masked, after)
        if k < len(masked) and masked[k] == "(" and k in br.close_of:
            after = br.close_of[k] + 1
        eol = _eol(masked, after)
        tail = masked[after:eol].rstrip()
        body = after + len(tail) - 1 if tail.endswith("{") else -1
        if body >= 0 and body in br.close_of:
            sig = collapse(text[m.start() : body])
            out.append(record(m.group("name"), sig, start_line, index.line(br.close_of[body])))
        else:
            end = body if body >= 0 else eol
            out.append(record(m.group("name"), collapse(text[m.start() : end]), start_line,
                              index.line(max(m.start(), eol - 1)) if body < 0 else index.line(len(masked) - 1)))
    return sort_records(out)


def _eol(text: str, pos: int) -> int:
    nl = text.find("\n", pos)
    return len(text) if nl == -1 else nl


def _skip_spaces(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\n":
        pos += 1
    return pos


# --- JavaScript / TypeScript ---------------------------------------------------------------------------------
_IDENT = r"[A-Za-z_$\u00c0-\uffff][\w$\u00c0-\uffff]*"
_FUNC = re.compile(
    r"(?<![\w$.])function\b[ \t\n]*(?P<star>\*?)[ \t\n]*(?P<name>" + _IDENT + r")?[ \t\n]*(?:<[^{};]*?>[ \t\n]*)?\("
)
_ARROW = re.compile(r"=>")
_MODIFIERS = r"(?:(?:public|private|protected|static|readonly|abstract|override|async|declare|accessor|get|set)[ \t]+)*"
_METHOD = re.compile(
    r"^[ \t]*" + _MODIFIERS + r"(?:\*[ \t]*)?(?P<name>#?" + _IDENT + r"|'[^'\n]*'|\"[^\"\n]*\"|\[[^\]\n]*\]|\d+)"
    r"[ \t]*[?!]?[ \t]*(?:<[^()\n]*>[ \t]*)?\(",
    re.MULTILINE,
)
_KEYWORDS = frozenset(
    """if for while switch catch function return with else do try new typeof await yield super this import
    export class interface type enum delete void throw case in of instanceof let const var debugger finally
    default extends implements package declare module namespace require""".split()
)
_BIND = re.compile(
    r"""(?:
        (?:^|[^\w$.\u00c0-\uffff])(?:(?:const|let|var)\s+)?(?P<var>""" + _IDENT + r""")\s*[?!]?\s*(?::(?:[^=;]|=>)*?)?(?<![=!<>])=(?![=>])\s*
      | \.\s*(?P<member>\#?""" + _IDENT + r""")\s*=\s*
      | (?:^|[{,])\s*(?P<key>""" + _IDENT + r"""|\d+)\s*:\s*
      | (?:^|[{,])\s*(?P<q>['"])(?P<qkey>[^'"\n]*)(?P=q)\s*:\s*
      | (?P<ckey>\[[^\]\n]*\])\s*:\s*
    )(?:async\s+)?(?:<[^();]*>\s*)?$""",
    re.VERBOSE,
)
_TYPE_ALIAS = re.compile(r"^\s*(?:export\s+)?(?:declare\s+)?type\s")
_TYPE_BRACE = re.compile(
    r"(?:\binterface\s+" + _IDENT + r"[^{};]*|\btype\s+" + _IDENT + r"\s*(?:<[^=]*>)?\s*=\s*|[:|&<]\s*)$"
)
_CONTROL = frozenset(
    "if for while switch function return typeof await yield super import new do else try void delete throw case".split()
)
_PATTERN_BRACE = re.compile(r"\b(?:const|let|var)\s*$")
_OBJECT_BRACE = re.compile(r"(?:[=(,:?\[]|\breturn|\bdefault|&&|\|\||\?\?)\s*$")
_CLASS_BRACE = re.compile(r"\bclass\b[^{};]*$")
_PREFIX_MAX = 300


class _JsExtractor:
    def __init__(self, text: str, typescript: bool) -> None:
        self.text = text
        self.ts = typescript
        self.m = mask_javascript(text)
        self.br = Brackets(self.m)
        self.index = LineIndex(self.m)
        self.out: list[dict] = []
        self._brace_kind: dict[int, str] = {}

    def run(self) -> list[dict]:
        self._functions()
        self._arrows()
        self._methods()
        return sort_records(self.out)

    # a `function` keyword: declarations, expressions (bound to a name or named), TS overload signatures
    def _functions(self) -> None:
        m = self.m
        for f in _FUNC.finditer(m):
            kw = f.start()
            bound = self._binding(kw)
            if bound is not None:
                name, name_pos = bound
            elif f.group("name"):
                name, name_pos = f.group("name"), f.start("name")
            else:
                continue
            sig_start = name_pos if bound is not None else kw
            self._emit(name, name_pos, sig_start, f.end() - 1, allow_signature=self.ts)

    def _arrows(self) -> None:
        m = self.m
        for a in _ARROW.finditer(m):
            pos = a.start()
            j = pos - 1
            while j >= 0 and m[j] in " \t\n":
                j -= 1
            if j < 0:
                continue
            line_start = m.rfind("\n", 0, j) + 1
            if m[j] == ")":
                params = self.br.open_of.get(j)
            elif m[j].isalnum() or m[j] in "_$":
                params = self._typed_params(line_start, j)
                if params is None:
                    k = j
                    while k >= line_start and (m[k].isalnum() or m[k] in "_$"):
                        k -= 1
                    params = k + 1
            else:
                params = self._typed_params(line_start, j)
            if params is None:
                continue
            bound = self._binding(params)
            if bound is None:
                continue
            name, name_pos = bound
            prefix_line = m[m.rfind("\n", 0, name_pos) + 1 : name_pos]
            if self.ts and _TYPE_ALIAS.match(prefix_line):
                continue
            if self.ts and self._kind(self.br.enclosing(pos)) == "type":
                continue
            body = _skip_spaces(m, a.end())
            if body < len(m) and m[body] == "{":
                close = self.br.close_of.get(body)
                end = close if close is not None else body
            else:
                end = self._expression_end(body)
            self._add(name, name_pos, name_pos, a.end(), end)

    def _methods(self) -> None:
        m = self.m
        for f in _METHOD.finditer(m):
            name = f.group("name")
            brace = self.br.enclosing(f.start())
            kind = self._kind(brace)
            if kind not in ("class", "code") or (
                kind == "code"
                and name in _KEYWORDS
                and (name in _CONTROL or not _OBJECT_BRACE.search(self.m, max(0, brace - 40), brace))
            ):
                continue  # a keyword is a method name only in a class body or an object literal
            if name[0] in "'\"[":
                name = self.text[f.start("name") : f.end("name")]
                name = name if name[0] == "[" else name[1:-1]
            self._emit(name, f.start("name"), f.start("name"), f.end() - 1, allow_signature=kind == "class",
                       method=True)

    # helpers -----------------------------------------------------------------------------------------------
    def _emit(self, name: str, name_pos: int, sig_start: int, open_paren: int, allow_signature: bool,
              method: bool = False) -> None:
        m = self.m
        close = self.br.close_of.get(open_paren)
        if close is None:
            if not method:
                self._add(name, name_pos, sig_start, _eol(m, open_paren), _eol(m, open_paren) - 1)
            return
        k = _skip_spaces(m, close + 1)
        if k < len(m) and m[k] == ":":  # TS return type
            k = self._skip_type(k + 1)
        if k < len(m) and m[k] == "{":
            body_close = self.br.close_of.get(k)
            self._add(name, name_pos, sig_start, k, body_close if body_close is not None else k)
        elif allow_signature and (k >= len(m) or m[k] in ";\n}" or m.startswith("//", k)):
            end = k if k < len(m) and m[k] == ";" else close
            self._add(name, name_pos, sig_start, min(len(m), end + 1), end)

    def _add(self, name: str, name_pos: int, sig_start: int, sig_end: int, end: int) -> None:
        line = self.index.line(name_pos)
        sig = collapse(self.text[sig_start:sig_end])
        self.out.append(record(name, sig, line, self.index.line(max(end, name_pos))))

    def _binding(self, pos: int) -> tuple[str, int] | None:
        """The name a function value starting at `pos` is bound to on its line (`x =`, `a.x =`, `x:`)."""
        m = self.m
        line_start = max(m.rfind("\n", 0, pos) + 1, pos - _PREFIX_MAX)
        if not m[line_start:pos].strip() and line_start > 0:
            # `x =` / `key:` at the end of the previous line
            line_start = max(m.rfind("\n", 0, line_start - 1) + 1, pos - _PREFIX_MAX)
        prefix = m[line_start:pos]
        if not prefix.strip():
            return None
        b = _BIND.search(prefix)
        if b is None:
            return None
        for group in ("var", "member", "key", "qkey", "ckey"):
            if b.group(group) is not None:
                name_pos = line_start + b.start(group)
                name = self.text[name_pos : line_start + b.end(group)]
                kind = self._kind(self.br.enclosing(name_pos))
                if group == "var":
                    if name in _KEYWORDS:
                        return None
                    if kind == "paren" and ":" in b.group(0):
                        return None  # a typed parameter's default value
                    if kind == "code" and not re.match(r"(?:const|let|var)\s", b.group(0).lstrip(" \t\n({,;")):
                        brace = self.br.enclosing(name_pos)
                        before = self.m[max(0, brace - 40) : brace]
                        if _OBJECT_BRACE.search(before) or _PATTERN_BRACE.search(before):
                            return None  # `{ x = () => 1 }` is a destructuring default, not a binding
                elif group in ("key", "qkey", "ckey") and kind != "code":
                    return None  # `name: (x) => T` in parentheses, a type or a class body is a type
                return name, name_pos
        return None

    def _typed_params(self, line_start: int, j: int) -> int | None:
        """For `(a): T =>` find the parameter list's `(`; None when the text before `=>` is no such thing."""
        m = self.m
        seg = m[line_start : j + 1]
        close = seg.rfind(")")
        while close != -1:
            tail = seg[close + 1 :]
            if re.fullmatch(r"\s*:[^;=()]*", tail) or re.fullmatch(r"\s*:\s*[\w$.]+\s+is\s+[^;=()]*", tail):
                return self.br.open_of.get(line_start + close)
            if "(" in tail or ")" in tail:
                return None
            close = seg.rfind(")", 0, close)
        return None

    def _skip_type(self, k: int) -> int:
        """From just after a return type's `:`, the offset of the body `{`, `;` or line end that follows it."""
        m = self.m
        n = len(m)
        limit = min(n, k + 2000)
        while k < limit:
            c = m[k]
            if c in "([<" and c != "<":
                close = self.br.close_of.get(k)
                if close is None:
                    return k
                k = close + 1
                continue
            if c == "{":
                prev = m[:k].rstrip()[-1:] if k else ""
                if prev in (":", "|", "&", "<", ",") or m[max(0, k - 3) : k].strip() == "=>":
                    close = self.br.close_of.get(k)  # an object type inside the return type
                    if close is None:
                        return k
                    k = close + 1
                    continue
                return k
            if c in ";}":
                return k
            if c == "\n":
                nxt = _skip_spaces(m, k)
                if nxt < n and m[nxt] in "|&{":
                    k = nxt
                    continue
                return k
            k += 1
        return k

    def _expression_end(self, pos: int) -> int:
        """Last offset of an arrow function's expression body starting at `pos`."""
        m = self.m
        n = len(m)
        i = pos
        last = pos
        while i < n:
            e = _EXPR_STOP.search(m, i)
            if e is None:
                return n - 1
            c = e.group()
            k = e.start()
            if c in "([{":
                close = self.br.close_of.get(k)
                if close is None:
                    return _eol(m, k) - 1
                last = close
                i = close + 1
                continue
            if c in ")]};,":
                return _last_code(m, pos, k)
            # newline: does the expression go on?
            before = m[last:k].rstrip()
            prev = before[-1:] if before else m[last : last + 1]
            nxt = _skip_spaces(m, k)
            if nxt >= n:
                return _last_code(m, pos, k)
            if (prev and prev in "=+-*/%&|^!?:.<>(,") or m[nxt] in ".?:+-*/%&|^=<>" and not m.startswith("//", nxt):
                last = k
                i = k + 1
                continue
            return _last_code(m, pos, k)
        return n - 1

    def _kind(self, brace: int) -> str:
        """What the bracket at `brace` opens: "class" body, "type" (interface / type literal), "code" (any
        other `{`), "paren", "square", or "top" (no bracket)."""
        if brace < 0:
            return "top"
        if self.m[brace] != "{":
            return "paren" if self.m[brace] == "(" else "square"
        kind = self._brace_kind.get(brace)
        if kind is None:
            before = self.m[max(0, brace - 400) : brace]
            if _CLASS_BRACE.search(before):
                kind = "class"
            elif self.ts and _TYPE_BRACE.search(before):
                kind = "type"
            else:
                kind = "code"
            self._brace_kind[brace] = kind
        return kind


_EXPR_STOP = re.compile(r"[\n;,(){}\[\]]")


def _last_code(m: str, start: int, stop: int) -> int:
    """Offset of the last non-space character in m[start:stop] (or `start`)."""
    seg = m[start:stop].rstrip()
    return start + max(0, len(seg) - 1)
