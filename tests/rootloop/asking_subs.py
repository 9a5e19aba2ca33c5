"""Scripted sub-RLMs whose first block asks models (issue 31): three turns each, the first block calling one
of the model-calling helpers, the calls tagged with the sub-RLM they come from.

Each sub-RLM's `context` starts with its tag (`p0`, `p1`, …); its answer is the number of words in it.
`FIRST_BLOCKS[helper]` is the first block for each helper; `reply_for(helper)` is the server's rule;
`tag_of(rec)` names the sub-RLM a call comes from (None for calls of no sub-RLM's block: root calls).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.rootloop.script import ROOT_MARK, SUB_MARK, repl

__all__ = ["FIRST_BLOCKS", "prompts", "reply_for", "tag_of"]

_TAG_LINE = "tag = context.split()[0]\n"
FIRST_BLOCKS = {
    "llm_query": _TAG_LINE + "said = llm_query('child of ' + tag + ': ' + context)\nprint(len(said))",
    "llm_query_batched": _TAG_LINE
    + "said = llm_query_batched(['child of ' + tag + ' a: ' + context, 'child of ' + tag + ' b'])\n"
    + "print(len(said))",
    "map_reduce": _TAG_LINE
    + "said = map_reduce(context, 'child of ' + tag + ' map {chunk}',\n"
    + "                  'child of ' + tag + ' reduce {results}', n_chunks=2)\nprint(len(said))",
    "find_relevant": _TAG_LINE
    + "rows = '\\n'.join('row ' + str(i) + ' child of ' + tag for i in range(150))\n"
    + "said = find_relevant(rows, 'row 7', top_k=1, use_llm_scoring=True)\nprint(len(said))",
    "rlm_query": _TAG_LINE + "said = rlm_query('deep-' + tag + ' w w')\nprint(len(said))",
}

_TAG = re.compile(r"child of (p\d+)|deep-(p\d+)")


def prompts(n: int, words: int = 2) -> list[str]:
    """n sub-RLM prompts `p<i> w w …` (i + words words after the tag); the answers are their word counts."""
    return [" ".join([f"p{i}"] + ["w"] * (i + words)) for i in range(n)]


def tag_of(rec) -> str | None:  # noqa: ANN001 - a RecordedRequest
    """The sub-RLM whose block made this call (a nested sub-RLM's root calls count as its parent's)."""
    if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt and "deep-p" not in rec.prompt:
        return None  # a sub-RLM's own root call
    m = _TAG.search(rec.prompt)
    return None if m is None else m.group(1) or m.group(2)


def reply_for(helper: str) -> Callable[[object], str]:
    """The server's rule: sub-RLMs take three turns, the first running `FIRST_BLOCKS[helper]`; a nested
    sub-RLM (rlm_query) counts its words in two; model calls answer "5" (a score) or "ok"."""
    first = FIRST_BLOCKS[helper]

    def reply(rec) -> str:  # noqa: ANN001 - a RecordedRequest
        if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt:
            turn = rec.prompt.count("Output of turn") + 1
            if "deep-p" in rec.prompt:  # the nested sub-RLM of the rlm_query block
                return repl("m = len(context.split())\nprint(m)") if turn == 1 else repl("FINAL(m)")
            if turn == 1:
                return repl(first)
            if turn == 2:
                return repl("n = len(context.split())\nprint(n)")
            return repl("FINAL(n)")
        if "Rate how relevant" in rec.prompt:
            return "5"
        return "ok"

    return reply
