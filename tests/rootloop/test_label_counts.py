"""Issue 27 item 4, aggregation/32K-count-0 of the long-context AFTER run (2026-12-06): a count of what the
text does not write (an implied intent) gets the hint to have the sub-model pick the lines that count, part by
part, and code counts the picks that are lines of `context` — scripted roots against the real sandbox and
client on the local test server."""

from __future__ import annotations

import random

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop.driver import run_rlm
from rlm_kernel.rootloop.labels import part_lines
from tests.llm_server import LLMTestServer
from tests.rootloop.script import ROOT_MARK, SUB_MARK, Script, repl

_rng = random.Random(27)
_SAYS = {
    "refund": ["I would like my money back for the {p}.", "Please send the payment for the {p} back."],
    "praise": ["The {p} is wonderful, thank you!", "Really happy with the {p}."],
    "how-to": ["How do I reset the {p}?", "Where is the manual for the {p}?"],
}
_KINDS = [_rng.choice(list(_SAYS)) for _ in range(150)]
LINES = [
    f"[msg {i + 1:04d}] user {_rng.randint(100, 999)}: "
    + _rng.choice(_SAYS[k]).format(p=_rng.choice(["kettle", "lamp", "router"]))
    for i, k in enumerate(_KINDS)
]
REFUNDS = _KINDS.count("refund")
QUESTION = (
    "Each line is one customer message; its intent is one of: refund request (asks for money back), praise, "
    "how-to question. How many messages are a refund request? Answer with the number."
)


class FollowsHints(Script):
    """A root that, at a "FOLLOW" turn, replies with the ```repl block the last feedback showed."""

    def __call__(self, rec):  # noqa: ANN001 - a RecordedRequest
        if ROOT_MARK in rec.prompt and SUB_MARK not in rec.prompt and self.root and self.root[0] == "FOLLOW":
            self.root.popleft()
            return repl(rec.last_user.rsplit("```repl\n", 1)[1].split("\n```", 1)[0])
        return super().__call__(rec)


def _picks(rec) -> str:  # noqa: ANN001 - the sub-model: copies the refund lines, and invents one more
    lines = rec.last_user.split("Lines:\n", 1)[1].splitlines()
    picked = [ln for ln in lines if "money back" in ln or "payment" in ln]
    return "\n".join([*picked, "[msg 9999] user 1: I want my money back for everything."]) or "NONE"


def test_a_count_of_what_the_text_does_not_write_is_made_of_sub_model_picks(
    client_on_server: LLMTestServer,
) -> None:
    search = "hits = [line for line in context.splitlines() if 'refund' in line.lower()]\nprint(len(hits))"
    script = FollowsHints(root=[repl(search), "FOLLOW", "FINAL(n)"], child=_picks)
    client_on_server.reply_with(script)
    loaded = ctxmod.load("\n".join(LINES), kind="text")
    result = run_rlm(QUESTION, loaded, options=RunOptions(max_iterations=3, best_effort=False))
    first, second = result.trajectory[0], result.trajectory[1]
    assert first.stdout.strip() == "0" and "llm_query_batched(" in first.feedback
    assert QUESTION in first.feedback  # the run's own question, no placeholder to fill in
    parts = [c for c in second.calls if c.kind == "llm_query_batched"]
    assert parts and parts[0].ok and parts[0].saw_context
    assert second.stdout.strip() == str(REFUNDS)  # the invented line is not a line of `context`
    assert f"reply with just:\n```repl\nFINAL('{REFUNDS}')\n```" in second.feedback
    assert result.termination == "final" and result.answer == str(REFUNDS) and result.iterations == 3


def test_no_label_hint_for_a_corpus_or_a_question_that_does_not_count(
    client_on_server: LLMTestServer,
) -> None:
    search = "hits = [line for line in context.splitlines() if 'refund' in line.lower()]\nprint(len(hits))"
    client_on_server.reply_with(Script(root=[repl(search)]))
    loaded = ctxmod.load("\n".join(LINES), kind="text")
    question = "Which message asks for a refund?"
    result = run_rlm(question, loaded, options=RunOptions(max_iterations=1, best_effort=False))
    assert "llm_query_batched(" not in result.trajectory[0].feedback


def test_parts_are_sized_from_the_answer_budget_and_the_window() -> None:
    text = "\n".join(["x" * 99] * 1000)  # 100 characters a line
    assert part_lines(text, 16_384, 512) == 30  # two answers' worth: 2 x 512 tokens x 3 characters
    assert part_lines(text, 4_096, 4_096) == 10  # one call's reading bounds it (a 1,000-character chunk)
    assert part_lines("a\nb", 16_384, 1) == 5
