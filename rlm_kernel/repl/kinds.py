"""Whether an answer is of the kind its question asks for, where the kind has a shape in the context: a class
is a name some `class NAME` line of `context` defines, a function or method a name some `def NAME` line does.

Measured with the coder model (long-context AFTER run, 2026-12-06, code/32K-override-2): for "Which class
overrides the method `header_fetch_parse` of its base class `Policy`?" the search printed the method's `def`
line and that line was accepted; it names no class at all. An answer of the wrong kind is refused whatever
evidence it has: the shape is the context's own (what its `class`/`def` lines define), not a word list.
"""

from __future__ import annotations

import re

from rlm_kernel.repl.asked import asked_words

__all__ = ["DEFINED", "code_kind", "defined_names", "kind_problem", "names_defined"]

_KINDS = {
    "class": "class",
    "classes": "class",
    "function": "def",
    "functions": "def",
    "method": "def",
    "methods": "def",
}
DEFINED = {
    "class": re.compile(r"^[ \t]*class[ \t]+([A-Za-z_]\w*)", re.M),
    "def": re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)", re.M),
}
_WHAT = {"class": "class", "def": "function or method"}


def code_kind(question: str) -> str | None:
    """Return "class" or "def" when the question's wh-phrase asks for a class, or a function or method."""
    for word in asked_words(question):
        if word in _KINDS:
            return _KINDS[word]
    return None


def defined_names(text: str, kind: str) -> frozenset[str]:
    """The names `text`'s `class` (kind "class") or `def` (kind "def") lines define."""
    return frozenset(DEFINED[kind].findall(text)) if text else frozenset()


def names_defined(answer: str, names: frozenset[str]) -> bool:
    """Whether `answer` has an identifier (or the last part of a dotted one) among `names`."""
    return any(w in names or w.rsplit(".", 1)[-1] in names for w in re.findall(r"[A-Za-z_][\w.]*", answer))


def kind_problem(answer: str, question: str, names_of) -> str | None:  # noqa: ANN001 - kind -> frozenset
    """Why `answer` is not of the kind asked (None: it is, or the kind has no shape here). `names_of(kind)`
    gives the names the context defines of that kind; a context that defines none of them is not checked."""
    kind = code_kind(question)
    if kind is None:
        return None
    names = names_of(kind)
    if not names or names_defined(answer, names):
        return None
    what = _WHAT[kind]
    keyword = "class" if kind == "class" else "def"
    return (
        f"the question asks which {what}, and this answer names none that `context` defines (a `{keyword} "
        f"NAME` line). A line inside a {what} is not its name: find the `{keyword}` line the printed line "
        f"belongs to (the nearest `{keyword}` line above it with less indentation), then end with that "
        f"{what}'s name"
    )
