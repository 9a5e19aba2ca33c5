"""Issue 27 item 4, multihop/32K-3hop-1 of the long-context AFTER run (2026-12-06): for a chained question the
first hop's line was accepted as the answer. A hop names another thing of the question, not what it asks
for; the feedback walks the chain one search at a time and the gate refuses each hop — scripted roots
against the real sandbox and client on the local test server."""

from __future__ import annotations

import pytest

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.asked import asked_words, is_step
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop.driver import run_rlm
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

QUESTION = "What colour are the visitor badges at the office that runs the project Marta Holm works on?"
FIRST = "Marta Holm has joined the Heron project team."
SECOND = "The Heron project is run from the Lisbon office."
THIRD = "Visitors to the Lisbon office wear crimson badges."
NOTES = "\n\n".join(
    ["Meeting notes, week 3."] * 30
    + [
        FIRST,
        "Marta Brandt has joined the Heron project team.",
        "Ines Varga has joined the Heron project team.",
        "Marta Okafor has joined the Basalt project team.",
    ]
    + ["The agenda was agreed."] * 30
    + [SECOND, "The Basalt project is run from the Ghent office."]
    + ["Action items were reviewed."] * 30
    + [THIRD, "Visitors to the Ghent office wear teal badges."]
)


def _search(word: str) -> str:
    search = f"hits = [line for line in context.splitlines() if {word!r} in line]\n"
    return search + "print(len(hits)); print(hits[:10])"


def test_each_hop_of_a_chain_is_refused_and_the_hints_walk_to_the_answer(
    client_on_server: LLMTestServer,
) -> None:
    script = Script(
        root=[
            repl(_search("Marta Holm")),
            repl(f"FINAL({FIRST!r})"),  # the first hop: refused (multihop/32K-3hop-1 accepted it)
            repl(_search("Heron")),
            repl(f"FINAL({SECOND!r})"),  # the second hop: refused
            repl(_search("Lisbon")),
            repl(f"FINAL({THIRD!r})"),
        ]
    )
    client_on_server.reply_with(script)
    loaded = ctxmod.load(NOTES, kind="text")
    result = run_rlm(QUESTION, loaded, options=RunOptions(max_iterations=6, best_effort=False))
    feedbacks = [t.feedback for t in result.trajectory]
    notes = [t.note for t in result.trajectory]
    assert "names no visitor/badges" in feedbacks[0] and "if 'Heron' in line]" in feedbacks[0]
    assert "rejected" in notes[1] and "step towards the answer" in notes[1]
    # the Heron search prints the first hop again, and its sibling (a namesake on the same project, which
    # shares as many of the question's words): the next search is for the office, not Heron or Brandt
    assert FIRST in result.trajectory[2].stdout and "if 'Lisbon' in line]" in feedbacks[2]
    assert "rejected" in notes[3]
    assert f"reply with just:\n```repl\nFINAL({THIRD!r})\n```" in feedbacks[4]
    assert result.termination == "final" and result.answer == THIRD and result.iterations == 6


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        (QUESTION, ("visitor", "badges")),  # an attribute of a thing: the thing
        ("What is the colour of the door?", ("door",)),
        ("What colour is it?", ()),
    ],
)
def test_an_attribute_question_asks_about_its_thing(question: str, asked: tuple[str, ...]) -> None:
    assert asked_words(question) == asked


def test_a_hop_names_another_thing_of_the_question() -> None:
    assert is_step(FIRST, QUESTION) and is_step(SECOND, QUESTION) and not is_step(THIRD, QUESTION)
    two = "From which office is the project that Yusuf Moreau works on run?"
    assert is_step("Yusuf Moreau has joined the Meridian project team.", two)
    assert not is_step("The Meridian project is run from the Tampere office.", two)
    assert not is_step("Marta lives in Lisbon these days", "Which city does Marta live in?")


def test_a_phrase_that_found_nothing_is_re_run_for_the_name_the_question_gives(
    client_on_server: LLMTestServer,
) -> None:
    # held-out long-context cases on the coder model (multihop/32K-3hop-5, 3hop-7, 2026-12-07): the first
    # block searched for 'visitor badges' (the text says "Visitors to the ... office wear ... badges"), found
    # nothing and was re-run unchanged to the turn limit; now the loop re-runs it for the question's name
    phrase = "hits = [line for line in context.splitlines() if 'visitor badges' in line.lower()]\n"
    phrase += "print(len(hits)); print(hits[:10])"
    script = Script(
        root=[repl(phrase), repl(_search("Heron")), repl(_search("Lisbon")), repl(f"FINAL({THIRD!r})")]
    )
    client_on_server.reply_with(script)
    loaded = ctxmod.load(NOTES, kind="text")
    result = run_rlm(QUESTION, loaded, options=RunOptions(max_iterations=4, best_effort=False))
    first = result.trajectory[0]
    assert first.code == phrase.strip()
    assert first.stdout.startswith(
        "0\n[]\n[your block re-run with 'marta holm' in place of 'visitor badges']\n"
    )
    assert FIRST in first.stdout and "re-ran the block with 'marta holm' for 'visitor badges'" in first.note
    assert "found nothing: the text does not use that phrase" in first.feedback
    assert "if 'Heron' in line]" in first.feedback  # the chain's next hop, from the re-run's line
    assert result.termination == "final" and result.answer == THIRD


def test_a_phrase_search_with_hits_or_naming_the_name_is_not_re_run(client_on_server: LLMTestServer) -> None:
    found = "hits = [line for line in context.splitlines() if 'the agenda' in line.lower()]\nprint(len(hits))"
    named = (  # nothing found, but the block already searches for the name: not re-run
        "hits = [l for l in context.splitlines() if 'marta holm' in l.lower() and 'has left' in l.lower()]\n"
        "print(len(hits))"
    )
    loaded = ctxmod.load(NOTES, kind="text")
    for code in (found, named):
        client_on_server.reply_with(Script(root=[repl(code)]))
        result = run_rlm(QUESTION, loaded, options=RunOptions(max_iterations=1, best_effort=False))
        assert "[your block re-run" not in result.trajectory[0].stdout, code
        assert result.trajectory[0].stdout.strip() in ("0", "30"), result.trajectory[0].stdout
