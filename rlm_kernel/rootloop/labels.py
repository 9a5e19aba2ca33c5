"""The hint for counting what a text does not write: the sub-model picks the lines that count, part by part
(`llm_query_batched`), and code counts the picked lines that are lines of `context`.

Measured with the coder model (long-context AFTER run, 2026-12-06, aggregation/32K-count-0): "How many
messages are a refund request?" over 330 messages whose intent is implied, never written. The root searched
for 'refund' (0 hits) eight turns running and ended best effort with `[]`; it never asked a sub-model to read
the messages. A search that finds nothing for a "how many" question over a text of many lines gets this
hint, with the run's own question and a part size from the configured window and answer budget.

Parts are sized so the sub-model's answer fits its answer budget (`max_tokens`): it copies the lines that
count, so a part holds at most about two answers' worth of characters, and never more than one call reads
(`prompt.chunk_chars`). Only lines that are really lines of the part are counted: a sub-model that rewrites a
line or invents one does not add to the count.
"""

from __future__ import annotations

from typing import Any

from rlm_kernel.repl.asked import wants_number
from rlm_kernel.rootloop.prompt import chunk_chars, window_tokens
from rlm_kernel.rootloop.trajectory import Turn

__all__ = ["MIN_LINES", "label_hint", "part_lines"]

MIN_LINES = 40
"""A text of fewer lines is read whole by other means (a sub-call, find_relevant)."""
_CHARS_PER_TOKEN = 3


def part_lines(text: str, window: int, answer_tokens: int) -> int:
    """How many of `text`'s lines go in one part: about min(2 x the answer budget, one call's reading) in
    characters, over the lines' mean length; at least 5."""
    lines = [line for line in text.splitlines() if line.strip()]
    mean = max(1.0, sum(len(line) + 1 for line in lines) / max(len(lines), 1))
    chars = min(2 * answer_tokens * _CHARS_PER_TOKEN, chunk_chars(window, answer_tokens))
    return max(5, int(chars // mean))


def _budgets() -> tuple[int, int]:
    from rlm_kernel import llm

    try:
        config = llm.get_client().config
        return window_tokens(config), int(getattr(config, "max_tokens", 1024) or 1024)
    except Exception:  # noqa: BLE001 - a hint must never break a run
        return 16_384, 1024


def label_hint(run: Any, turn: Turn, found_nothing: bool) -> str | None:
    """The hint to have the sub-model pick the lines that count, for a "how many" question over one text of
    many lines whose search (`found_nothing`: the output only says no hits) found nothing; None otherwise."""
    text = run.loaded.value
    if not found_nothing or turn.calls or turn.error or run.loaded.files or not isinstance(text, str):
        return None
    if not wants_number(run.question) or text.count("\n") + 1 < MIN_LINES:
        return None
    window, answer_tokens = _budgets()
    k = part_lines(text, window, answer_tokens)
    ask = (
        "Question about a whole text: " + run.question + "\n\nYou see only some of its lines. Do not answer "
        "the question: copy exactly each line below that counts for it, one per line, and nothing else "
        "(NONE if no line counts).\n\nLines:\n"
    )
    return (
        "Your search found no line with those words: what the question counts is not written in the text "
        "(a meaning: an intent, a topic, a sentiment), so code cannot find it by words. Have the sub-model "
        f"read the lines, {k} at a time, and pick the ones that count; then count with code only the "
        "picked lines that are lines of `context` — reply with:\n```repl\n"
        f"ask = {ask!r}\n"
        "lines = context.splitlines()\n"
        f"parts = [lines[i:i + {k}] for i in range(0, len(lines), {k})]\n"
        'answers = llm_query_batched([ask + "\\n".join(p) for p in parts])\n'
        "n = sum(1 for p, a in zip(parts, answers) for line in p if line.strip() and line.strip() in a)\n"
        "print(n)\n```"
    )
