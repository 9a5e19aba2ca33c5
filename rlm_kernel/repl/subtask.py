"""The question a sub-RLM is given: the task's own lines at the top of its `context`, quoted, and where the
text they are about starts.

`rlm_query(prompt)` makes `prompt` the sub-RLM's `context`, so the task ("Count how many times ... in the
text below") sits inside the data it is about. Two things follow. The sub-RLM's question quotes those lines,
so the model reads the task as its question and the FINAL gate treats them as the question (quoting them
is not reading the context, see `repl.gate`). And the question says where the rest begins
(`context[N:]`): measured with Qwen2.5-Coder-1.5B, a sub-RLM told only "the task is in `context`" counted
the word in the task's own line too.
"""

from __future__ import annotations

__all__ = ["GENERIC_QUESTION", "quotes_task", "sub_question", "task_lead", "task_of"]

GENERIC_QUESTION = "The task is in `context`: read it, do what it asks, and give the answer with FINAL."
_MAX_LEAD = 600  # characters: a longer first paragraph is data, not an instruction
_MAX_LINE = 300


def task_lead(prompt: str) -> str:
    """The instruction at the top of a sub-RLM's prompt: its first paragraph (up to the first blank line),
    or else its first line; "" when neither is short and followed by more text (a prompt that is all data).

    Returned exactly as it appears at the start of `prompt` (after leading whitespace), so
    `prompt.lstrip().startswith(lead)`.
    """
    text = prompt.lstrip()
    for cut, limit in ((text.find("\n\n"), _MAX_LEAD), (text.find("\n"), _MAX_LINE)):
        if cut <= 0:
            continue
        lead = text[:cut].rstrip()
        if lead and len(lead) <= limit and text[cut:].strip():
            return lead
    return ""


def _data_start(prompt: str, lead: str) -> int:
    start = prompt.find(lead) + len(lead)
    while start < len(prompt) and prompt[start].isspace():
        start += 1
    return start


def sub_question(prompt: str) -> str:
    """The question of the sub-RLM whose `context` is `prompt`."""
    lead = task_lead(prompt)
    if not lead:
        return GENERIC_QUESTION
    start = _data_start(prompt, lead)
    return (
        "The task is in `context`: it starts with these lines,\n"
        f"<<<\n{lead}\n>>>\n"
        f"and the text they are about is the rest of `context`, `context[{start}:]`. Do what they ask on "
        "that text and give the answer with FINAL."
    )


def task_of(question: str, context: object) -> tuple[str, int] | None:
    """(the task's lines, where the text they are about starts) when `question` is the sub-RLM question
    `sub_question` made for `context`; None for any other run."""
    if not isinstance(context, str):
        return None
    lead = task_lead(context)
    if not lead or question != sub_question(context):
        return None
    return lead, _data_start(context, lead)


def quotes_task(output: str, lead: str, min_chars: int = 24) -> bool:
    """Whether `output` contains one of the task's lines (of `min_chars` or more): code that searched
    `context` found the task's own words."""
    return any(len(line.strip()) >= min_chars and line.strip() in output for line in lead.splitlines())
