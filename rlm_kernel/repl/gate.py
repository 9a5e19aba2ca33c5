"""The FINAL gate: when a root's answer is accepted, and the checks it rests on.

A FINAL is accepted once the run connects the answer to `context`, in one of three ways:

1. a sub-call (`llm_query*`, `rlm_query*`) whose prompt contained part of `context` has succeeded in the run
   (a call without any of the context, e.g. `llm_query(question)`, does not count);
2. the answer was computed by code over the context: a block that reads `context` (or `ctx`) has run in the
   run, and the answer is given by `FINAL(expression)` / `FINAL_VAR(name)` in code, or by a prose
   `FINAL_VAR(name)` — not by a literal such as `FINAL("seven")`;
3. the answer is what such code printed: its text (or, for an answer with numbers, every number in it)
   appears in the output of a block that ran after code first read `context` (a block that only prints
   literal text, `print("The answer is 7")`, computes nothing and does not count).

The run's question is never evidence, wherever the model finds it: a sub-call that only quotes it does not
count for rule 1, and the question's lines printed by code do not count for rule 3. A sub-RLM's task lies
inside its own `context` (`rlm_query(prompt)` makes the prompt the context), so its question quotes the
task's lines (`repl.subtask`) and those lines are covered too.

Rule 2 and 3 are for tasks code answers exactly (counts, filters, lookups); rule 1 for everything that needs
reading or judgement. The system prompt states the same rule.
"""

from __future__ import annotations

import ast
import re

__all__ = [
    "FinalGate",
    "answer_in_output",
    "block_facts",
    "context_text",
    "names_from_sub_calls",
    "rejection",
    "shares_text",
    "without_question",
]

_WINDOW = 24
_MAX_WINDOWS = 160
_CONTEXT_NAMES = frozenset({"context", "ctx", "context_files"})
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def context_text(value: object) -> str:
    """The text a sub-call's prompt is checked against: the context itself, or its items/values as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "\n".join(str(v) for v in value)
    return str(value)


def shares_text(prompt: str, source: str, window: int = _WINDOW, besides: str = "") -> bool:
    """Whether `prompt` contains a piece of `source` of about `window`+ characters (or all of a shorter one)
    that is not also in `besides` (the run's question: quoting the question is not reading the context).

    Up to `_MAX_WINDOWS` windows of `prompt`, spread evenly, are looked up in `source`: any run of `source`
    longer than the spacing plus `window` is always found.
    """
    if not prompt or not source:
        return False
    core = source.strip()
    if len(core) <= 2 * window:
        return bool(core) and core in prompt and core not in besides
    if len(prompt) < window:
        return False
    last = len(prompt) - window
    step = max(1, last // _MAX_WINDOWS + 1, window // 2)
    for start in range(0, last + 1, step):
        piece = prompt[start : start + window]
        if _counts(piece, source, besides):
            return True
    return _counts(prompt[last:], source, besides)


def _counts(piece: str, source: str, besides: str) -> bool:
    return bool(piece.strip()) and len(set(piece)) > 3 and piece in source and piece not in besides


def _normal(text: str) -> str:
    text = text.strip().strip("'\"").strip()
    return text.rstrip(".").strip()


def answer_in_output(answer: str, output: str) -> bool:
    """Whether the answer is something code printed: its text at word boundaries in `output`, a long piece
    of it in `output`, or (for an answer with numbers) every number in it."""
    text = _normal(answer)
    if not text or not output:
        return False
    if re.search(r"(?<!\w)" + re.escape(text) + r"(?!\w)", output):
        return True
    if len(text) > 2 * _WINDOW and shares_text(text, output):
        return True
    numbers = [n.replace(",", "") for n in _NUMBER.findall(text)]
    plain = output.replace(",", "")
    return bool(numbers) and all(
        re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w])", plain) for n in numbers
    )


def block_facts(code: str) -> tuple[bool, bool]:
    """(reads context, has a FINAL/FINAL_VAR with a literal argument) for one block of code.

    A block that does not parse reads nothing and has no literal FINAL (it will not run anyway).
    """
    tree = _parse(code)
    if tree is None:
        return False, False
    reads = any(isinstance(n, ast.Name) and n.id in _CONTEXT_NAMES for n in ast.walk(tree))
    literal = False
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "FINAL"
            and node.args
            and _is_literal(node.args[0])
        ):
            literal = True
    return reads, literal


_SUB_CALLS = frozenset({"llm_query", "rlm_query"})


def names_from_sub_calls(code: str) -> list[str]:
    """The variables a block assigns from one sub-call (`answer = llm_query(...)`), in order."""
    tree = _parse(code)
    names: list[str] = []
    for node in ast.walk(tree) if tree is not None else ():
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in _SUB_CALLS
        ):
            names += [t.id for t in node.targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def prints_only_literals(code: str) -> bool:
    """Whether a block only prints literal text (`print("The answer is 7")`): it computes nothing, so its
    output is the model's own words, not evidence from the context."""
    tree = _parse(code)
    if tree is None or not tree.body:
        return False
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            return False
        value = stmt.value
        if _is_literal(value):
            continue
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "print"
            and all(_is_literal(a) for a in value.args)
        ):
            continue
        return False
    return True


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) for v in node.values)
    return False


class FinalGate:
    """What one run has shown so far, and the decision for a FINAL (see the module docstring)."""

    def __init__(self) -> None:
        self.context_calls = 0
        self.code_read_context = False
        self.literal_in_block = False
        self.output = ""
        self.question = ""
        self._source: tuple[int, str] = (0, "")

    def source_for(self, value: object) -> str:
        """`context_text(value)`, converted once per context object."""
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        if self._source[0] != id(value):
            self._source = (id(value), context_text(value))
        return self._source[1]

    def accepts(self, answer: str, computed: bool) -> bool:
        if self.context_calls:
            return True
        if computed and self.code_read_context:
            return True
        return self.code_read_context and answer_in_output(answer, self.output)

    def saw(self, text: str) -> None:
        """Add a block's output (only output after code first read `context` counts for rule 3), without
        the question's lines that code printed (`without_question`)."""
        if self.code_read_context and text:
            text = without_question(text, self.question)
            self.output = (self.output + "\n" + text)[-200_000:]


def without_question(output: str, question: str) -> str:
    """`output` without what quotes the question: each of its lines (of `_WINDOW`+ characters) removed
    where it appears, and output lines (as long) that are part of the question dropped."""
    if not question:
        return output
    lines = {ln.strip() for ln in question.splitlines() if len(ln.strip()) >= _WINDOW}
    for line in sorted(lines, key=len, reverse=True):
        output = output.replace(line, " ")
    return "\n".join(
        ln for ln in output.splitlines() if not (len(ln.strip()) >= _WINDOW and ln.strip() in question)
    )


def rejection(how: str, had_calls: bool) -> str:
    """The one message a rejected FINAL feeds back."""
    why = (
        "the sub-calls so far did not include any of `context`"
        if had_calls
        else "no sub-call with part of `context` has succeeded and no code has computed this answer"
    )
    return (
        f"{how}(...) rejected: {why}. It is accepted when (1) an llm_query/rlm_query call that was given "
        "part of `context` succeeded (e.g. llm_query(question + chunk)), or (2) code that reads `context` "
        "computed the answer: FINAL(variable) or FINAL_VAR('name') in a ```repl block, or an answer your "
        "code printed."
    )
