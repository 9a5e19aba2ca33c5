"""Lexers for the regex engine: blank out comments and the insides of strings, keeping every offset.

Comments become spaces; string and regex-literal contents become `_` (delimiters kept); newlines always stay.
"""

from __future__ import annotations

import re

__all__ = ["mask_c_like", "mask_go", "mask_javascript", "mask_python"]

_NOT_NL = re.compile(r"[^\n]")


def _blank(text: str, fill: str) -> str:
    return _NOT_NL.sub(fill, text) if "\n" in text else fill * len(text)


# --- Python -----------------------------------------------------------------------------------------------
_PY = re.compile(
    r"""
    (?P<c>\#[^\n]*)
  | (?P<p>[rRbBuUfF]{0,2})
    (?P<s> '''(?:[^'\\]|\\.|'(?!''))*+(?:'''|\Z)
         | \"\"\"(?:[^"\\]|\\.|"(?!""))*+(?:\"\"\"|\Z)
         | '(?:[^'\\\n]|\\.)*+(?:'|$)
         | "(?:[^"\\\n]|\\.)*+(?:"|$) )
    """,
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)


def mask_python(text: str) -> tuple[str, list[tuple[int, int]]]:
    """Masked text and the (start, end) offsets of string literals spanning several lines."""
    multi: list[tuple[int, int]] = []

    def repl(m: re.Match) -> str:
        if m.group("c") is not None:
            return " " * len(m.group("c"))
        s = m.group("s")
        q = 3 if s[:3] in ("'''", '"""') else 1
        closed = len(s) >= 2 * q and s.endswith(s[:q])
        inner_end = len(s) - q if closed else len(s)
        if "\n" in s:
            multi.append((m.start("s"), m.end("s")))
        return m.group("p") + s[:q] + _blank(s[q:inner_end], "_") + s[inner_end:]

    return _PY.sub(repl, text), multi


# --- Go and other C-like languages without regex literals or interpolation ----------------------------------
_GO = re.compile(
    r"""
    (?P<c>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<s>"(?:[^"\\\n]|\\.)*+(?:"|$) | `[^`]*+(?:`|\Z) | '(?:[^'\\\n]|\\.)*+(?:'|$))
    """,
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)


def _c_repl(m: re.Match) -> str:
    c = m.group("c")
    if c is not None:
        return _blank(c, " ")
    s = m.group("s")
    closed = len(s) >= 2 and s[-1] == s[0]
    return s[0] + _blank(s[1 : len(s) - 1 if closed else len(s)], "_") + (s[-1] if closed else "")


def mask_go(text: str) -> str:
    """Go: comments, interpreted strings, raw strings and runes."""
    return _GO.sub(_c_repl, text)


mask_c_like = mask_go

# --- JavaScript / TypeScript ------------------------------------------------------------------------------
_JS_CODE = re.compile(r"//|/\*|['\"`/]")
_JS_CODE_IN_TEMPLATE = re.compile(r"//|/\*|['\"`/{}]")
_JS_TEMPLATE = re.compile(r"\\.|`|\$\{", re.DOTALL)
_JS_STRING = {
    "'": re.compile(r"(?:[^'\\\n]|\\.)*+(?:'|$)", re.DOTALL | re.MULTILINE),
    '"': re.compile(r'(?:[^"\\\n]|\\.)*+(?:"|$)', re.DOTALL | re.MULTILINE),
}
_JS_REGEX = re.compile(r"(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*+\])++/")
_REGEX_AFTER_WORDS = frozenset(
    "return typeof instanceof in of new delete void throw case do else yield await".split()
)
_WORD_BEFORE = re.compile(r"[\w$]+$")


def _regex_allowed(out: list[str], text: str, pos: int) -> bool:
    """Whether a `/` at `pos` starts a regex literal (judged from the previous significant character)."""
    i = pos - 1
    while i >= 0 and text[i] in " \t\n":
        i -= 1
    if i < 0:
        return True
    c = text[i]
    if c in ")]}":
        return False
    if c.isalnum() or c in "_$":
        m = _WORD_BEFORE.search(text, max(0, i - 20), i + 1)
        return bool(m) and m.group() in _REGEX_AFTER_WORDS
    return c not in "\"'`"


def mask_javascript(text: str) -> str:
    """JavaScript/TypeScript: comments, strings, templates (code in `${}` kept), regex literals."""
    out: list[str] = []
    pos = 0
    n = len(text)
    stack: list[str] = []  # "t" = a template's ${ ... }, "b" = an ordinary brace inside one
    while pos < n:
        scanner = _JS_CODE_IN_TEMPLATE if stack else _JS_CODE
        m = scanner.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        start = m.start()
        out.append(text[pos:start])
        tok = m.group()
        if tok == "//":
            nl = text.find("\n", start)
            end = n if nl == -1 else nl
            out.append(" " * (end - start))
            pos = end
        elif tok == "/*":
            close = text.find("*/", start + 2)
            end = n if close == -1 else close + 2
            out.append(_blank(text[start:end], " "))
            pos = end
        elif tok in ("'", '"'):
            body = _JS_STRING[tok].match(text, start + 1)
            end = body.end()
            closed = end > start + 1 and text[end - 1] == tok
            out.append(tok + "_" * (end - start - 1 - closed) + (tok if closed else ""))
            pos = end
        elif tok == "/":
            if _regex_allowed(out, text, start):
                body = _JS_REGEX.match(text, start + 1)
                if body is not None:
                    out.append("/" + "_" * (body.end() - start - 2) + "/")
                    pos = body.end()
                    continue
            out.append("/")
            pos = start + 1
        elif tok == "{":
            stack.append("b")
            out.append("{")
            pos = start + 1
        elif tok == "}":
            top = stack.pop() if stack else "b"
            out.append("}")
            pos = start + 1
            if top == "t":
                pos = _template(text, pos, out, stack, opened=False)
        else:  # backtick
            out.append("`")
            pos = _template(text, start + 1, out, stack, opened=True)
    return "".join(out)


def _template(text: str, pos: int, out: list[str], stack: list[str], opened: bool) -> int:
    """Mask template text from `pos` to the closing backtick or the next `${`; return where code resumes."""
    scan = pos
    while True:
        m = _JS_TEMPLATE.search(text, scan)
        if m is None:
            out.append(_blank(text[pos:], "_"))
            return len(text)
        tok = m.group()
        if tok == "`":
            out.append(_blank(text[pos : m.start()], "_") + "`")
            return m.end()
        if tok == "${":
            out.append(_blank(text[pos : m.start()], "_") + "${")
            stack.append("t")
            return m.end()
        scan = m.end()
