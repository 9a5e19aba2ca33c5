"""What a question asks for (repl/asked.py) and the gate rules built on it: the step refused, the answer kept;
an answer that displays as empty refused (issue 27)."""

from __future__ import annotations

import pytest

from rlm_kernel.repl.asked import asked_words, has_number, is_step, names_asked_thing, wants_number
from rlm_kernel.repl.gate import FinalGate, empty_problem

JOIN = "Which room's door did Marta Quist's badge open?"
NEEDLE = "What is the maintenance override code mentioned in the log?"


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("What is alpha?", ()),  # about a thing it names: no kind of thing asked for
        ("What was `_fold_mime_parameters`?", ()),
        ("What does parse_args return?", ()),
        ("What defines the header folding?", ()),
        ("Which file defines `_fold_mime_parameters`?", ("file",)),
        ("What is the city where Marta lives?", ("city",)),  # the determiner starts a noun phrase
        (JOIN, ("room", "door")),
        ("How many files are in the package?", ()),
        ("What is the colour of the door?", ("door",)),  # an attribute of a thing asks about the thing
        ("Which room", ()),  # no question mark
    ],
)
def test_asked_words(question: str, asked: tuple[str, ...]) -> None:
    assert asked_words(question) == asked


def test_a_path_names_a_file() -> None:
    question = "Which file defines `_fold_mime_parameters`?"
    assert names_asked_thing("It is defined in email/_header_value_parser.py", question)
    assert names_asked_thing("utils.py", question)
    assert not names_asked_thing("It is defined near the top of the parser", question)


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("badge 35415 was issued to Marta Quist", JOIN),  # the first hop's line (coder model, measured)
        ("2025-03-01 10:02:11 [badges] badge 35415 was issued to Marta Quist", JOIN),
        ("The badge number is 35415", JOIN),
    ],
)
def test_a_step_is_a_step(text: str, question: str) -> None:
    assert is_step(text, question)


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("first letter / none", "What is alpha?"),  # the engine test's tool answer (was refused)
        ("It is defined in email/_header_value_parser.py", "Which file defines `_fold_mime_parameters`?"),
        ("The code is 4411-DELTA", NEEDLE),  # a value of the asked thing's own words
        ("Marta Quist's badge opened room 4C", JOIN),
        ("It opened 4C, on the second floor", JOIN),  # no asked word, but nothing the question names
        ("Marta lives in Lisbon these days", "Which city does Marta live in?"),
    ],
)
def test_an_answer_is_not_a_step(text: str, question: str) -> None:
    assert not is_step(text, question)


def _gate(question: str) -> FinalGate:
    gate = FinalGate()
    gate.question = question
    return gate


def test_the_gate_refuses_the_step_and_keeps_the_answer() -> None:
    gate = _gate(JOIN)
    why = gate.off_question("badge 35415 was issued to Marta Quist")
    assert why is not None and "step towards the answer" in why
    assert gate.off_question("The door of room 4C was opened") is None
    assert _gate("What is alpha?").off_question("first letter / none") is None
    assert _gate("Which file defines `f`?").off_question("It is in email/utils.py") is None


@pytest.mark.parametrize(
    ("answer", "value"),
    [("[]", []), ("{}", {}), ("''", ""), ("None", None), ("[]", "[]"), ("set()", "set()"), ("  ", "  ")],
)
def test_an_answer_that_displays_as_empty_is_refused(answer: str, value: object) -> None:
    why = empty_problem(answer, value, "Which line mentions the vault?")
    assert why is not None and "the answer is empty" in why and "Search `context` again" in why


@pytest.mark.parametrize("answer", ["NONE", "none.", "Unknown", "Not found", "I don't know.", "`N/A`"])
def test_a_sub_model_non_answer_is_refused_as_empty(answer: str) -> None:
    # hint follower, code/128K-where-0: a sub-model given a file's text answered NONE, and it was accepted
    assert empty_problem(answer, answer, "Which file defines `Message`?") is not None
    assert empty_problem(answer, answer, "What is the default of `charset`?") is not None


@pytest.mark.parametrize(
    ("answer", "value", "question"),
    [
        ("None", None, "What is the default of `maxlinelen`?"),  # None may be the answer
        ("None", "None", "What does `f` return?"),
        ("0", 0, "How many lines mention the vault?"),  # a count of zero is an answer
        ("[1]", [1], "Which ids?"),
        ("4C", "4C", JOIN),
        ("Nothing is raised", "Nothing is raised", "What does a bare raise raise?"),  # more than a non-answer
        ("unknown_encoding", "unknown_encoding", "What is the default of `errors`?"),
    ],
)
def test_a_real_answer_is_not_refused_as_empty(answer: str, value: object, question: str) -> None:
    assert empty_problem(answer, value, question) is None


def test_which_file_answered_without_a_path_is_a_step() -> None:
    question = "Which file defines `_fold_mime_parameters`?"
    assert is_step("def _fold_mime_parameters(part, lines, maxlen):", question)
    assert not is_step("email/_header_value_parser.py", question)


def test_a_how_many_answer_needs_a_number() -> None:
    assert wants_number("How many times does the word 'else' occur in the text below?")
    assert wants_number("How much memory does it use?") and not wants_number("Which file defines `f`?")
    assert has_number("3") and has_number("There are three.") and has_number("It occurs twice")
    assert not has_number('["else" ":" suite]') and not has_number("else:")
