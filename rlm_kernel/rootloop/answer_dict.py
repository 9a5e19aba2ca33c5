"""The reference library's final-answer protocol: `answer["content"] = ...; answer["ready"] = True`.

A run's namespace starts with `answer = {"content": None, "ready": False}` (a `--shared` run only when the
notebook has no `answer` yet). After each block, an exact dict `answer` whose `"ready"` is `True` ends the
run like `FINAL(answer["content"])`: the same FINAL gate applies (a literal content counts as a literal
FINAL), and a rejected one is set back to not ready, with the reason fed back.
"""

from __future__ import annotations

import ast

from rlm_kernel.repl import citations, found_citations
from rlm_kernel.repl.gate import rejection
from rlm_kernel.repl.state import RunTracker
from rlm_kernel.rootloop.answer_types import text_of

__all__ = ["NAME", "before", "check", "install", "renew"]

NAME = "answer"


def install(ns: dict, shared: bool) -> None:
    """Give a run's namespace the `answer` dict (a shared notebook's own `answer` is left alone)."""
    if not shared or NAME not in ns:
        ns[NAME] = {"content": None, "ready": False}


def renew(ns: dict, shared: bool) -> None:
    """A follow-up run starts with a fresh `answer` dict (in a shared namespace, only when `answer` is
    still the reference-style dict: the notebook's own `answer` is left alone)."""
    box = ns.get(NAME)
    if not shared or (type(box) is dict and set(box) == {"content", "ready"}):
        ns[NAME] = {"content": None, "ready": False}


def _assignments(code: str, key: str) -> list[ast.AST]:
    """The values the block assigns to `answer[key]`."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    values = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == NAME
                    and isinstance(target.slice, ast.Constant)
                    and target.slice.value == key
                ):
                    values.append(node.value)
    return values


def _assigns(code: str, key: str) -> bool:
    return bool(_assignments(code, key))


def before(ns: dict) -> tuple:
    """What `answer` is before a block runs: a block ends the run only if it set `ready` (a dict left ready
    by an earlier run, e.g. before a follow-up, does not end the next one)."""
    box = ns.get(NAME)
    if type(box) is not dict:
        return (None, False, None)
    return (id(box), dict.get(box, "ready") is True, id(dict.get(box, "content")))


def check(
    ns: dict,
    tracker: RunTracker,
    code: str,
    previous: tuple = (None, False, None),
    loaded: object = None,
    cite_wanted: bool = False,
    printed: str = "",
) -> None:
    """After a block: accept `answer["content"]` when the block made `answer["ready"] is True` and the gate
    agrees; `answer["cite"]` (quotes or spans) is checked against the loaded context `loaded` as FINAL's
    cite= is (repl.citations); with `cite_wanted` (--cite) an answer without citations gets the lines of
    `printed` (the block's output) or earlier output that back it (`found_citations`), else it is sent back
    once."""
    box = ns.get(NAME)
    if type(box) is not dict or dict.get(box, "ready") is not True:
        return
    if previous == (id(box), True, id(dict.get(box, "content"))) and not _assigns(code, "ready"):
        return  # ready before the block, and the block did not set it
    content = dict.get(box, "content")
    try:
        text = text_of(content)
    except Exception as err:  # noqa: BLE001 - a content whose repr fails is fed back
        dict.__setitem__(box, "ready", False)
        tracker.rejections.append(
            f'answer["content"] could not be read as text ({type(err).__name__}); set it to a str'
        )
        return
    flow = tracker.gate.flow
    computed = any(flow.drawn(v) for v in _assignments(code, "content")) or (
        not _assignments(code, "content") and NAME in flow.names
    )
    gate = tracker.gate
    scoped = any(gate.expr_in_scope(v) for v in _assignments(code, "content")) or (
        not _assignments(code, "content") and gate.in_scope(NAME)
    )
    why = gate.problem(text, computed, content, scoped)
    if why is not None:
        dict.__setitem__(box, "ready", False)
        blind = tracker.successes > 0 and not tracker.gate.context_calls
        tracker.rejections.append(
            rejection("FINAL", blind, why).replace(
                "FINAL(...) rejected", 'answer["ready"] = True rejected (answer["ready"] is False again)', 1
            )
        )
        return
    cite = dict.get(box, "cite")
    if cite is not None:
        checked = citations.check(cite, loaded)
        if checked.rejected and not tracker.cite_feedback_given:
            tracker.cite_feedback_given = True
            dict.__setitem__(box, "ready", False)
            tracker.rejections.append(
                citations.feedback(checked, "answer").replace(
                    "answer(...) rejected",
                    'answer["ready"] = True rejected (answer["ready"] is False again)',
                    1,
                )
            )
            return
        tracker.citations = checked.accepted
    else:
        found = found_citations.for_run(text, tracker.gate, loaded, printed) if cite_wanted else []
        if cite_wanted and not found and not tracker.cite_feedback_given:
            tracker.cite_feedback_given = True
            dict.__setitem__(box, "ready", False)
            tracker.rejections.append(citations.MISSING.format(how='answer["ready"] = True'))
            return
        tracker.citations = found
    tracker.final, tracker.final_set = text, True
    tracker.final_value = content
