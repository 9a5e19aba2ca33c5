"""Regex engine for JavaScript and TypeScript: `function`, arrow and method patterns over masked text.

Names come from bindings (`x =`, `a.x =`, `key:`), bodies from linear bracket matching; types are skipped.
Over 400 lines on purpose: one language's patterns and the one extractor that applies them, which share
the masked text, its bracket pairs and its line index; split, each half would be read only with the other.
"""

from __future__ import annotations

import re

from rlm_kernel.analysis.extract.brackets import Brackets
from rlm_kernel.analysis.extract.common import LineIndex, collapse, record, sort_records
from rlm_kernel.analysis.extract.masking import mask_javascript
from rlm_kernel.analysis.extract.regex_go import eol as _eol
from rlm_kernel.analysis.extract.regex_go import skip_spaces as _skip_spaces

__all__ = ["extract_javascript"]


def extract_javascript(text: str, typescript: bool = False) -> list[dict]:
    """Functions of JavaScript (or, with `typescript=True`, TypeScript) source."""
    return _JsExtractor(text, typescript=typescript).run()


_IDENT = r"[A-Za-z_$\u00c0-\uffff][\w$\u00c0-\uffff]*"
_FUNC = re.compile(
    r"(?<![\w$.])function\b[ \t\n]*(?P<star>\*?)[ \t\n]*(?P<name>"
    + _IDENT
    + r")?[ \t\n]*(?:<[^{};]*?>[ \t\n]*)?\("
)
_ARROW = re.compile(r"=>")
_MODIFIERS = (
    r"(?:(?:public|private|protected|static|readonly|abstract|override|async|declare|accessor|get|set)"
    r"[ \t]+)*"
)
_METHOD = re.compile(
    r"^[ \t]*"
    + _MODIFIERS
    + r"(?:\*[ \t]*)?(?P<name>#?"
    + _IDENT
    + r"|'[^'\n]*'|\"[^\"\n]*\"|\[[^\]\n]*\]|\d+)"
    r"[ \t]*[?!]?[ \t]*(?:<[^()\n]*>[ \t]*)?\(",
    re.MULTILINE,
)
_METHOD_INLINE = re.compile(
    r"[{,][ \t]*(?:(?:async|get|set|static)[ \t]+)*(?:\*[ \t]*)?(?P<name>#?" + _IDENT + r")[ \t]*\("
)
_KEYWORDS = frozenset(
    """if for while switch catch function return with else do try new typeof await yield super this import
    export class interface type enum delete void throw case in of instanceof let const var debugger finally
    default extends implements package declare module namespace require""".split()
)
_TAIL = r"(?:async\s+)?(?:<[^();]*>\s*)?$"
_NOT_WORD_BEFORE = r"(?:^|[^\w$.\u00c0-\uffff])"
# tried in order; each must end where the function value starts (after `async` / type parameters)
_BINDS = (
    ("member", re.compile(r"\.\s*(?P<member>\#?" + _IDENT + r")\s*=\s*" + _TAIL)),
    (
        "var",
        re.compile(
            _NOT_WORD_BEFORE + r"(?:(?:const|let|var)\s+)?(?P<var>" + _IDENT + r")\s*[?!]?\s*="
            r"(?![=>])\s*" + _TAIL
        ),
    ),
    ("key", re.compile(r"(?:^|[{,])\s*(?P<key>" + _IDENT + r"|\d+)\s*:\s*" + _TAIL)),
    ("qkey", re.compile(r"(?:^|[{,])\s*(?P<q>['\"])(?P<qkey>[^'\"\n]*)(?P=q)\s*:\s*" + _TAIL)),
    ("ckey", re.compile(r"(?P<ckey>\[[^\]\n]*\])\s*:\s*" + _TAIL)),
)
# `x: Type = ...` (costlier: tried only when the prefix has a colon)
_BIND_TYPED = re.compile(
    _NOT_WORD_BEFORE + r"(?:(?:const|let|var)\s+)?(?P<var>" + _IDENT + r")\s*[?!]?\s*:(?:[^=;]|=>)*?"
    r"(?<![=!<>])=(?![=>])\s*" + _TAIL
)
_TYPE_BEFORE = re.compile(r"(?:[:>|&\]]|=>)\s*[\w$.\s]*\.?\s*$")
_BIND_TAIL = re.compile(r"(?:\s|\basync\b|<[^();]*>)*$")
_TYPE_ALIAS = re.compile(r"^\s*(?:export\s+)?(?:declare\s+)?type\s")
_TYPE_BRACE = re.compile(
    r"(?:\binterface\s+" + _IDENT + r"[^{};]*|\btype\s+" + _IDENT + r"\s*(?:<[^=]*>)?\s*=\s*|[:|&<]\s*)$"
)
_CONTROL = frozenset(
    "if for while switch function return typeof await yield super import new do else try void delete throw"
    " case".split()
)
_PATTERN_BRACE = re.compile(r"\b(?:const|let|var)\s*$")
_OBJECT_BRACE = re.compile(r"(?:[=(,:?\[]|\breturn|\bdefault|&&|\|\||\?\?)\s*$")
_CLASS_BRACE = re.compile(r"\bclass\b[^{};]*$")
_PREFIX_MAX = 160
_SHORT_PREFIX = 90


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
            line_start = max(self._line_start(j), j - _PREFIX_MAX)
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
            prefix_line = m[max(self._line_start(name_pos), name_pos - _PREFIX_MAX) : name_pos]
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
            self._method(f, inline=False)
        for f in _METHOD_INLINE.finditer(m):
            self._method(f, inline=True)

    def _method(self, f: re.Match, inline: bool) -> None:
        """A method definition `name(...) {` at a line start or, `inline`, after `{` / `,` of an object."""
        name = f.group("name")
        if inline:  # cheap test first: minified code has a `, call(` on every line
            close = self.br.close_of.get(f.end() - 1)
            if close is None or not self.m.startswith("{", _skip_spaces(self.m, close + 1)):
                return
        brace = self.br.enclosing(f.start("name"))
        kind = self._kind(brace)
        if inline and not (
            kind == "class" or kind == "code" and _OBJECT_BRACE.search(self.m, max(0, brace - 40), brace)
        ):
            return
        if kind not in ("class", "code") or (
            kind == "code"
            and name in _KEYWORDS
            and (name in _CONTROL or not _OBJECT_BRACE.search(self.m, max(0, brace - 40), brace))
        ):
            return  # a keyword is a method name only in a class body or an object literal
        if name[0] in "'\"[":
            name = self.text[f.start("name") : f.end("name")]
            name = name if name[0] == "[" else name[1:-1]
        self._emit(
            name,
            f.start("name"),
            f.start("name"),
            f.end() - 1,
            allow_signature=kind == "class",
            method=True,
        )

    def _is_parameter_list(self, paren: int) -> bool:
        """Whether the `(` at `paren` opens a parameter list: its `)` is followed by `{`, `=>` or `: Type`."""
        close = self.br.close_of.get(paren)
        if close is None:
            return False
        k = _skip_spaces(self.m, close + 1)
        return self.m.startswith(("{", "=>", ":"), k)

    def _line_start(self, pos: int) -> int:
        """Offset where the line holding `pos` begins (a bisect, not a scan: minified lines are long)."""
        return self.index.start(self.index.line(pos))

    # helpers -----------------------------------------------------------------------------------------------
    def _emit(
        self,
        name: str,
        name_pos: int,
        sig_start: int,
        open_paren: int,
        allow_signature: bool,
        method: bool = False,
    ) -> None:
        m = self.m
        close = self.br.close_of.get(open_paren)
        if close is None:
            if not method:
                nl = m.find("\n", open_paren, open_paren + _PREFIX_MAX)
                end = nl if nl != -1 else min(len(m), open_paren + _PREFIX_MAX)
                self._add(name, name_pos, sig_start, end, end - 1)
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
        line_start = max(self._line_start(pos), pos - _PREFIX_MAX)
        if not m[line_start:pos].strip():
            if line_start == 0 or m[max(0, line_start - _PREFIX_MAX) : line_start].rstrip()[-1:] not in (
                "=",
                ":",
            ):
                return None
            # `x =` / `key:` at the end of the previous line
            line_start = max(self._line_start(line_start - 1), pos - _PREFIX_MAX)
        prefix = m[line_start:pos]
        tail = prefix.rstrip()
        if tail[-1:] not in ("=", ":"):
            tail = _BIND_TAIL.sub("", tail[-120:]) if tail.endswith((">", "async")) else ""
            if tail[-1:] not in ("=", ":"):
                return None  # cheap reject: a binding ends with `=` or `:` (then maybe `async`, `<T>`)
        # the untyped forms are short: search the end of the prefix only (a search tries every start)
        cut = max(0, len(prefix) - _SHORT_PREFIX)
        found = None
        for group, pattern in _BINDS:
            b = pattern.search(prefix, cut)
            if b is not None:
                if group in ("var", "member") and _TYPE_BEFORE.search(prefix, 0, b.start(group)):
                    break  # `x: Type = ...` / `x: ns.Type = ...`: that word is a type; try the typed form
                found = group, b
                break
        if found is None and ":" in prefix and (b := _BIND_TYPED.search(prefix)) is not None:
            found = "var", b
        if found is None:
            return None
        group, b = found
        name_pos = line_start + b.start(group)
        name = self.text[name_pos : line_start + b.end(group)]
        kind = self._kind(self.br.enclosing(name_pos))
        if group == "var":
            if name in _KEYWORDS:
                return None
            if kind == "paren" and (
                ":" in b.group(0) or self._is_parameter_list(self.br.enclosing(name_pos))
            ):
                return None  # a parameter's default value
            if kind == "code" and not re.match(r"(?:const|let|var)\s", b.group(0).lstrip(" \t\n({,;")):
                brace = self.br.enclosing(name_pos)
                before = self.m[max(0, brace - 40) : brace]
                if _OBJECT_BRACE.search(before) or _PATTERN_BRACE.search(before):
                    return None  # `{ x = () => 1 }` is a destructuring default, not a binding
        elif group in ("key", "qkey", "ckey") and kind != "code":
            return None  # `name: (x) => T` in parentheses, a type or a class body is a type
        return name, name_pos

    def _typed_params(self, line_start: int, j: int) -> int | None:
        """For `(a): T =>` find the parameter list's `(`; None when the text before `=>` is no such thing.

        The return type may hold object types (`{ a: T; b: U }`) and span a few lines.
        """
        m = self.m
        start = max(0, j - 600)
        seg = m[start : j + 1]
        close = seg.rfind(")")
        while close != -1:
            tail = seg[close + 1 :]
            for _ in range(4):  # drop nested object types, innermost first
                tail, n = _OBJECT_TYPE.subn("T", tail)
                if not n:
                    break
            if _RETURN_TYPE.fullmatch(tail) or _PREDICATE_TYPE.fullmatch(tail):
                return self.br.open_of.get(start + close)
            if "(" in tail or ")" in tail or ";" in tail:
                return None
            close = seg.rfind(")", 0, close)
        return None

    def _skip_type(self, k: int) -> int:
        """From just after a return type's `:`, the offset of the body `{`, `;` or line end after it."""
        m = self.m
        n = len(m)
        limit = min(n, k + 2000)
        while k < limit:
            c = m[k]
            if c in "([":
                close = self.br.close_of.get(k)
                if close is None:
                    return k
                k = close + 1
                continue
            if c == "{":
                prev = m[max(0, k - 200) : k].rstrip()[-1:]
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
            if m.count("`", pos, k) % 2:
                i = k + 1  # inside a template literal that spans lines
                continue
            before = m[last:k].rstrip()
            prev = before[-1:] if before else m[last : last + 1]
            nxt = _skip_spaces(m, k)
            if nxt >= n:
                return _last_code(m, pos, k)
            if (
                (prev and prev in "=+-*/%&|^!?:.<>(,")
                or m[nxt] in ".?:+-*/%&|^=<>"
                and not m.startswith("//", nxt)
            ):
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


_OBJECT_TYPE = re.compile(r"\{[^{}()]*\}")
_RETURN_TYPE = re.compile(r"\s*:[^;=()]*")
_PREDICATE_TYPE = re.compile(r"\s*:\s*[\w$.]+\s+is\s+[^;=()]*")
_EXPR_STOP = re.compile(r"[\n;,(){}\[\]]")


def _last_code(m: str, start: int, stop: int) -> int:
    """Offset of the last non-space character in m[start:stop] (or `start`)."""
    seg = m[start:stop].rstrip()
    return start + max(0, len(seg) - 1)
