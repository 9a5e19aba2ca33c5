"""A root block's search that can never match (an upper-case word looked up in lower-cased text): found,
described, and re-run fixed by the loop in the same turn, so the fixed search's output is what the root sees.

Measured with the coder model (issue 27, held-out long-context cases code/32K-where-4, multihop/32K-3hop-3 and
2hop-4, 2026-12-07): it wrote `'Compat32' in line.lower()`, printed no hits, and — told the fix in words, then
shown the fixed block to copy — re-ran its own block unchanged to the turn limit (8 turns), then guessed.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from rlm_kernel.rootloop.trajectory import Turn

__all__ = [
    "SearchFix",
    "case_mismatch",
    "find_fix",
    "no_hits",
    "phrase_fix",
    "question_name",
    "rerun_fixed_search",
    "rerun_header",
    "rerun_note",
    "rerun_view",
]

_NOTHING = ("0", "[]", "None", "{}", "set()", "''", "-1")


@dataclass(frozen=True)
class SearchFix:
    """`word` was looked up in text lowered by `method` (lower/casefold); `code` is the block with `word`
    lower-cased (None when the literal cannot be replaced in place: it spans several lines). For a phrase
    that found nothing (`name` set), `code` searches for the name the question gives instead."""

    word: str
    method: str
    code: str | None
    name: str = ""

    @property
    def replacement(self) -> str:
        """What the re-run searches for in place of `word`."""
        if self.name:
            return self.name.lower() if self.method else self.name
        return self.word.lower()


def _searches(code: str) -> tuple[ast.AST | None, list[tuple[ast.Constant, str, str]]]:
    """(the parsed block or None, its `'literal' in x` / `'literal' in x.lower()` tests as (the literal's
    node, the literal, the lowering method or ""))."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None, []
    found: list[tuple[ast.Constant, str, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)):
            continue
        if not (isinstance(node.left.value, str) and isinstance(node.ops[0], ast.In)):
            continue
        right = node.comparators[0]
        lowered = isinstance(right, ast.Call) and isinstance(right.func, ast.Attribute)
        method = right.func.attr if lowered else ""  # type: ignore[union-attr]
        found.append((node.left, node.left.value, method if method in ("lower", "casefold") else ""))
    return tree, found


def find_fix(code: str) -> SearchFix | None:
    """The first `'Word' in x.lower()` (or `.casefold()`) of `code` whose word has an upper-case letter."""
    for node, word, method in _searches(code)[1]:
        if method and word != word.lower():
            return SearchFix(word, method, _with_literal(code, node, word.lower()))
    return None


_NAME = re.compile(r"(?<![\w`'\"])([A-Z][a-z]{2,}(?: [A-Z][a-z]{2,}){0,2})")
_QUOTED = re.compile(r"`([^`]{3,60})`")


def question_name(question: str) -> str | None:
    """The name the question gives, where a chain of facts starts: a `quoted` term, else the first run of
    capitalised words that is not the question's first word ("Noor Varga" in "What colour are the visitor
    badges at the office that runs the project Noor Varga works on?"); None when it has neither."""
    quoted = _QUOTED.search(question)
    if quoted:
        return quoted.group(1).strip()
    for m in _NAME.finditer(question):
        if m.start() > 0:
            return m.group(1)
    return None


def phrase_fix(code: str, question: str) -> SearchFix | None:
    """For a block that searched for a phrase of several words (`'visitor badges' in line.lower()`): the
    block searching for the question's name instead; None when there is no such search or name, or the
    block already searches for the name."""
    name = question_name(question)
    if not name:
        return None
    tree, searches = _searches(code)
    if tree is None:
        return None
    literals = {
        n.value.lower() for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    if name.lower() in literals:
        return None
    for node, phrase, method in searches:
        if " " in phrase.strip():
            fix = SearchFix(phrase, method, None, name)
            return dataclasses.replace(fix, code=_with_literal(code, node, fix.replacement))
    return None


def case_mismatch(code: str) -> str:
    """The hint for a search that can never match, with the fixed block to copy (see the module docstring)."""
    fix = find_fix(code)
    if fix is None:
        return ""
    text = (
        f"Your search looks for {fix.word!r} in lower-cased text ({fix.method}()), so it can never "
        f"match: search for {fix.word.lower()!r} in line.lower(), or for {fix.word!r} in line."
    )
    return text + (f" Reply with the search fixed:\n```repl\n{fix.code}\n```" if fix.code else "")


def rerun_note(fix: SearchFix) -> str:
    """The hint for a turn whose search the loop re-ran fixed (`rerun_fixed_search`)."""
    if fix.name:
        return (
            f"Your search for {fix.word!r} found nothing: the text does not use that phrase. The loop ran "
            f"your block again for {fix.replacement!r}, the name the question gives, where its chain of "
            "facts starts: its output is shown above, after the line starting [your block re-run], and the "
            "variables it sets now hold what it found. Work from that output, one step at a time; search "
            "for single words or names, not phrases."
        )
    return (
        f"Your search looked for {fix.word!r} in lower-cased text ({fix.method}()), so it could never match. "
        f"The loop ran your block again with {fix.word.lower()!r} instead: its output is shown above, after "
        "the line starting [your block re-run], and the variables it sets now hold what it found. Work from "
        f"that output; in later searches write the word in lower case ({fix.word.lower()!r} in "
        "line.lower())."
    )


def _with_literal(code: str, node: ast.expr, value: str) -> str | None:
    """`code` with the string literal at `node` replaced by `value` (its repr), or None if it cannot be
    placed (a literal over several lines)."""
    if node.lineno != node.end_lineno or node.end_col_offset is None:
        return None
    lines = code.splitlines()
    line = lines[node.lineno - 1].encode()
    start, end = node.col_offset, node.end_col_offset
    lines[node.lineno - 1] = (line[:start] + repr(value).encode() + line[end:]).decode()
    return "\n".join(lines).strip()


def rerun_header(fix: SearchFix) -> str:
    """The line that starts the re-run's output in the turn's output."""
    return f"[your block re-run with {fix.replacement!r} in place of {fix.word!r}]\n"


def rerun_view(turn: Turn, fix: SearchFix) -> Turn:
    """The turn as the loop's re-run of it: the fixed block and what it printed (the hints read these)."""
    _, _, printed = turn.stdout.partition(rerun_header(fix))
    return dataclasses.replace(turn, code=fix.code, stdout=printed)


def no_hits(lines: list[str]) -> bool:
    """Whether the output only says the search found nothing (`0`, `[]`, `None`)."""
    return all(line.strip() in _NOTHING for line in lines)


def rerun_fixed_search(run: Any, turn: Turn, calls_before: int) -> SearchFix | None:
    """Re-run the turn's block with its never-matching search fixed, when the block found nothing, raised
    nothing, made no sub-call and did not end the run: the fixed block runs as the turn's own (model code,
    the cell's limits, the FINAL gate's bookkeeping) and its output is added to the turn's. Returns the fix
    (the turn's note says what was run), or None when nothing was re-run."""
    from rlm_kernel.rootloop.blocks import execute_blocks

    tracker = run.state.run
    if turn.code is None or turn.error or tracker is None or tracker.final_set:
        return None
    if tracker.interrupted or tracker.budget_error or getattr(run.state.session, "cancelled", None):
        return None
    if len(tracker.calls) != calls_before or not no_hits(turn.stdout.splitlines()):
        return None
    fix = find_fix(turn.code)
    if fix is not None and (fix.code is None or find_fix(fix.code) is not None):
        return None  # the fixed block still holds a mismatch (two words): shown as a hint to copy instead
    if fix is None:
        fix = phrase_fix(turn.code, run.question)
    if fix is None or fix.code is None:
        return None
    again = Turn(index=turn.index, reply="")
    execute_blocks(run, (fix.code,), again, [])
    header = rerun_header(fix)
    turn.stdout = (turn.stdout.rstrip("\n") + "\n" if turn.stdout.strip() else "") + header + again.stdout
    turn.value, turn.error = again.value, again.error
    return fix
