"""The sub-RLM's question: the leading lines of its prompt, and where the text they are about starts."""

from __future__ import annotations

from rlm_kernel.repl.subtask import GENERIC_QUESTION, quotes_task, sub_question, task_lead, task_of

TASK = "Count how many times the word 'else' occurs in the text below.\nAnswer with the number."
TEXT = 'The "while" statement\n***\n\nwhile_stmt ::= "while" expr ":" suite ["else" ":" suite]\n'


def test_the_first_paragraph_is_the_task_and_the_question_says_where_the_text_starts() -> None:
    prompt = "  " + TASK + "\n\n" + TEXT
    assert task_lead(prompt) == TASK
    question = sub_question(prompt)
    assert f"<<<\n{TASK}\n>>>" in question
    start = int(question.split("`context[")[1].split(":]`")[0])
    assert prompt[start:] == TEXT
    assert task_of(question, prompt) == (TASK, start)


def test_a_long_first_paragraph_falls_back_to_its_first_line() -> None:
    prompt = "Summarise the log below.\n" + "line of data\n" * 100 + "\nmore data"
    assert task_lead(prompt) == "Summarise the log below."


def test_a_prompt_that_is_all_data_gets_the_generic_question() -> None:
    one_line = "x" * 5000
    for prompt in (one_line, one_line + "\n" + "y" * 10, "Just a short task", "A short task\n\n   \n"):
        assert task_lead(prompt) == ""
        assert sub_question(prompt) == GENERIC_QUESTION
        assert task_of(GENERIC_QUESTION, prompt) is None


def test_task_of_is_only_for_the_question_sub_question_made() -> None:
    prompt = TASK + "\n\n" + TEXT
    assert task_of("How many else?", prompt) is None and task_of(sub_question(prompt), {"a": 1}) is None


def test_quotes_task() -> None:
    lead = task_lead(TASK + "\n\n" + TEXT)
    assert quotes_task(str(["Count how many times the word 'else' occurs in the text below.", "x"]), lead)
    assert not quotes_task("3\n['while_stmt ::= ...']", lead)
    assert not quotes_task("Answer", "Answer\nAnswer with the number.")  # short lines are not quotes
