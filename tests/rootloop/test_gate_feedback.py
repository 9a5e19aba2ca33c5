"""The FINAL gate, the loop's hints and the stated window: scripted root replies against the real sandbox and
the real client on the local test server (issue 17 items 11 and 12)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from rlm_kernel import llm
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.gate import answer_in_output, block_facts, names_from_sub_calls, shares_text
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop.driver import run_rlm
from rlm_kernel.rootloop.prompt import system_prompt
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

LINES = "\n".join(f"line {i}: {'ERROR disk full' if i % 7 == 0 else 'ok'}" for i in range(1, 701))
ERRORS = sum(1 for i in range(1, 701) if i % 7 == 0)  # 100


def run(server: LLMTestServer, script: Script, question: str = "How many ERROR lines?", **options: object):
    server.reply_with(script)
    options.setdefault("best_effort", False)  # these tests count turns (best-effort turns: own tests)
    return run_rlm(question, ctxmod.load(LINES, kind="text"), options=RunOptions(**options))


# -- the gate ----------


def test_a_count_computed_by_code_is_accepted_without_a_sub_call(client_on_server: LLMTestServer) -> None:
    script = Script(root=[repl("n = sum('ERROR' in line for line in context.splitlines())\nFINAL(n)")])
    result = run(client_on_server, script)
    assert result.termination == "final" and result.answer == str(ERRORS) and result.iterations == 1
    assert result.calls == 1  # the root turn only


def test_a_printed_answer_is_accepted_in_prose(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[
            repl("print(sum('ERROR' in line for line in context.splitlines()))"),
            f"The count is {ERRORS}.\nFINAL(There are {ERRORS} ERROR lines.)",
        ]
    )
    result = run(client_on_server, script)
    assert result.termination == "final" and result.answer == f"There are {ERRORS} ERROR lines."


def test_a_guess_is_rejected_even_after_reading_context(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[
            repl("print(context[:40])"),
            "FINAL(42)",  # never printed by code
            repl("FINAL('42')"),  # a literal, not computed
            # a sub-call that saw the context opens no gate for a value it did not give (issue 27 item 4)
            repl("ok = llm_query('Is this about disks? ' + context[:200])\nFINAL('42')"),
            repl("size = llm_query('How big is the disk? ' + context[:200])\nFINAL(size)"),
        ],
        child=lambda rec: "12 GB" if "How big" in rec.last_user else "yes",
    )
    result = run(client_on_server, script)
    assert result.termination == "final" and result.iterations == 5 and result.answer == "12 GB"
    assert all("rejected" in result.trajectory[i].note for i in (1, 2, 3))
    assert result.trajectory[3].calls[0].saw_context is True


def test_a_sub_call_without_context_does_not_open_the_gate(client_on_server: LLMTestServer) -> None:
    script = Script(root=[repl("a = llm_query('How many ERROR lines?')\nFINAL(a)")], child=lambda rec: "12")
    result = run(client_on_server, script, max_iterations=1)
    assert result.termination == "max_iterations"
    turn = result.trajectory[0]
    assert turn.calls[0].saw_context is False and "did not include any of `context`" in turn.note
    assert "did not include any of `context`" in turn.feedback


def test_a_sub_call_quoting_the_question_does_not_open_the_gate(client_on_server: LLMTestServer) -> None:
    # the question repeats words of the context ("ERROR disk full"); quoting it is not reading the context
    question = "How many lines say ERROR disk full in this log?"
    script = Script(root=[repl(f"a = llm_query({question!r})\nFINAL(a)")], child=lambda rec: "12")
    result = run(client_on_server, script, question=question, max_iterations=1)
    turn = result.trajectory[0]
    assert result.termination == "max_iterations" and turn.calls[0].saw_context is False
    assert "call had none of `context` in it, so its answer is a guess" in turn.feedback


def test_printing_a_context_free_sub_call_answer_is_not_evidence(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[
            repl("print(len(context))"),
            repl("print(llm_query('How many ERROR lines are there?'))"),  # the sub-model's guess, printed
            "FINAL(12)",
        ],
        child=lambda rec: "12",
    )
    result = run(client_on_server, script, max_iterations=3)
    assert result.termination == "max_iterations" and "rejected" in result.trajectory[2].note


def test_printing_a_literal_answer_is_not_evidence(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[
            repl("print(context[:30])"),
            repl("print('The answer is 4242')"),  # the model's own words, printed
            "FINAL(4242)",
        ]
    )
    result = run(client_on_server, script, max_iterations=3)
    assert result.termination == "max_iterations" and "rejected" in result.trajectory[2].note
    assert "You printed your answer as text" in result.trajectory[1].feedback
    assert "FINAL('The answer is 4242')" in result.trajectory[1].feedback


# A sub-RLM's task lies inside its own `context` (rlm_query(prompt) makes the prompt the context): the task's
# words are the sub-RLM's question, not evidence that it read the text the task is about.
SUB_TASK = "How many of the 100 lines below say ERROR? Count them with code and answer with the number."
SUB_RUN = (
    "try:\n"
    f"    a = rlm_query({SUB_TASK!r} + '\\n\\n' + context[:1200])\n"
    "except QueryError as err:\n"
    "    a = 'sub-RLM failed'\n"
    "print(a)"
)


def test_a_sub_rlm_quoting_its_task_does_not_open_its_gate(client_on_server: LLMTestServer) -> None:
    # the sub-model is asked the task alone, without the lines it is about: its answer is a guess
    script = Script(
        root=[repl(SUB_RUN)], sub=[repl(f"a = llm_query({SUB_TASK!r})\nFINAL(a)")], child=lambda r: "12"
    )
    result = run(client_on_server, script, max_iterations=2)
    assert "sub-RLM failed" in result.trajectory[0].stdout and "12" not in result.trajectory[0].stdout
    sub = result.trajectory[0].calls[0]
    assert sub.kind == "rlm_query" and not sub.ok
    first = sub.run["turns"][0]
    assert "rejected" in first["note"] and "call had none of `context` in it" in first["feedback"]


def test_a_sub_rlm_printing_its_task_is_not_evidence(client_on_server: LLMTestServer) -> None:
    # code that prints the task's own line prints its number (100), which is not a count of anything
    script = Script(root=[repl(SUB_RUN)], sub=[repl("print(context.splitlines()[0])"), "FINAL(100)"])
    result = run(client_on_server, script, max_iterations=2)
    assert "sub-RLM failed" in result.trajectory[0].stdout
    sub_turns = result.trajectory[0].calls[0].run["turns"]
    assert "rejected" in sub_turns[1]["note"]


def test_a_sub_rlm_counting_its_text_is_accepted(client_on_server: LLMTestServer) -> None:
    count = "n = context[context.index('line 1:'):].count('ERROR')\nprint(n)"
    expected = LINES[:1200].count("ERROR")
    script = Script(root=[repl(SUB_RUN)], sub=[repl(count), f"FINAL({expected})"])
    result = run(client_on_server, script, max_iterations=2)
    assert result.trajectory[0].stdout.strip() == str(expected)


def test_a_sub_rlm_is_told_where_its_text_starts(client_on_server: LLMTestServer) -> None:
    search = "hits = [ln for ln in context.splitlines() if 'error' in ln.lower()]\nprint(hits[:3])"
    script = Script(root=[repl(SUB_RUN)], sub=[repl(search), repl("print(len(context))")])
    run(client_on_server, script, max_iterations=2)
    subs = [r for r in client_on_server.requests if "The task is in `context`" in r.prompt]
    start = len(SUB_TASK) + 2
    assert f"<<<\n{SUB_TASK}\n>>>" in subs[0].prompt and f"`context[{start}:]`" in subs[0].prompt
    hint = (
        "Your search also matched the task itself (the start of `context`); the text the task is about is "
        f"`context[{start}:]`. Do the task on `context[{start}:]`, not on `context`."
    )
    assert hint in subs[1].last_user  # the search found the task's own line


def test_prose_final_naming_a_variable_gives_its_value(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[repl("count = sum('ERROR' in line for line in context.splitlines())"), "Done.\nFINAL(count)"]
    )
    result = run(client_on_server, script)
    assert result.termination == "final" and result.answer == str(ERRORS)


def test_shares_text_and_answer_in_output() -> None:
    source = LINES
    assert shares_text("Summarise: " + source[1000:1400] + " thanks", source)
    assert not shares_text("How many ERROR lines are there in the log?", source)
    assert shares_text("abc?", "abc") and not shares_text("xyz", "abc")
    assert answer_in_output("100", "count: 100\n") and not answer_in_output("10", "count: 100\n")
    assert answer_in_output("There are 1,200 lines.", "1200")
    assert not answer_in_output("seven", "eight")
    assert block_facts("n = len(ctx)\nFINAL(n)") == (True, False)
    assert block_facts("FINAL('x')") == (False, True)
    assert block_facts("FINAL(f'{n}')") == (False, False)


# -- running blocks ----------


def test_every_repl_block_runs_in_order_stopping_at_a_final(client_on_server: LLMTestServer) -> None:
    reply = (
        "```repl\na = 1\nprint('one')\n```\n```repl\nb = a + 1\nprint('two')\n```\n"
        "```repl\nn = sum('ERROR' in x for x in context.splitlines())\nFINAL(n)\n```\n```repl\nc = 3\n```"
    )
    result = run(client_on_server, Script(root=[reply]))
    assert result.termination == "final" and result.answer == str(ERRORS)
    assert result.namespace["b"] == 2 and "c" not in result.namespace
    assert "[block 1 of 4]\none" in result.trajectory[0].stdout and "two" in result.trajectory[0].stdout


def test_a_failing_block_stops_the_rest_and_says_so(client_on_server: LLMTestServer) -> None:
    reply = "```repl\nx = 1/0\n```\n```repl\ny = 2\n```"
    result = run(client_on_server, Script(root=[reply]), max_iterations=1)
    turn = result.trajectory[0]
    assert "ZeroDivisionError" in turn.error and "y" not in result.namespace
    assert "the 1 block(s) after it did not run" in turn.feedback


def test_a_python_block_beside_a_repl_block_is_reported(client_on_server: LLMTestServer) -> None:
    reply = "```python\nignored = True\n```\n```repl\nran = True\n```"
    result = run(client_on_server, Script(root=[reply]), max_iterations=1)
    assert result.namespace["ran"] is True and "ignored" not in result.namespace
    assert "Ignored 1 python block: only ```repl blocks ran" in result.trajectory[0].feedback


# -- hints ----------


def test_a_repeated_block_gets_a_hint(client_on_server: LLMTestServer) -> None:
    code = "print(len(context.splitlines()))"
    result = run(client_on_server, Script(root=[repl(code), repl(code + "  ")]), max_iterations=2)
    first, second = result.trajectory
    assert "same as the one in turn" not in first.feedback
    assert "This block is the same as the one in turn 1" in second.feedback


def test_short_output_printed_again_suggests_final(client_on_server: LLMTestServer) -> None:
    count = "print(len(context.splitlines()))"
    script = Script(root=[repl("x = 1\nprint('hello')"), repl(count), repl("n = 1\n" + count)])
    result = run(client_on_server, script, max_iterations=3)
    first, second, third = result.trajectory
    assert "If this output answers the question" not in first.feedback  # no context read yet
    # a first short output is as often a step (a length, a number of hits) as the answer: no FINAL suggested
    assert "If this output answers the question" not in second.feedback
    hint = "If this output answers the question, reply with just:\n```repl\nFINAL('700')\n```"
    assert hint in third.feedback  # the same output again: now it is suggested
    assert third.feedback.rstrip().endswith("for a variable holding the answer).")  # hints come last


def test_long_output_printed_again_suggests_final(client_on_server: LLMTestServer) -> None:
    # a count printed above the lines it counted is longer than a one-line answer; printed again, the model
    # is told that printing does not end the run (the coder model then ended with FINAL(count))
    search = "hits = [ln for ln in context.splitlines() if 'ERROR' in ln]\nprint(len(hits)); print(hits[:10])"
    script = Script(root=[repl(search), repl(search + "\n")])
    # not a count of lines: that question gets the count offered at once (test_right_answers)
    result = run(client_on_server, script, question="What do the ERROR lines say?", max_iterations=2)
    first, second = result.trajectory
    assert len(second.stdout) > 200 and "Printing an answer does not end the run" not in first.feedback
    assert "Printing an answer does not end the run" in second.feedback
    # no template to copy: the coder model sent `FINAL("<the part of the output that answers>")` back as
    # written, turn after turn (tutorial 5); it is told to narrow the output down with code instead
    assert "Narrow it down with code" in second.feedback
    assert "FINAL(" not in second.feedback.split("Printing an answer", 1)[1]
    # never FINAL(answer): `answer` is the preloaded reference-style dict (issue 27 item 4)
    assert "FINAL(answer)" not in second.feedback


def test_long_output_of_a_variable_printed_again_names_the_variable(client_on_server: LLMTestServer) -> None:
    search = "line = [ln for ln in context.splitlines() if 'ERROR' in ln][0]\nprint(line * 20)\nprint(line)"
    script = Script(root=[repl(search), repl(search + "\n")])
    result = run(client_on_server, script, max_iterations=2)
    assert "reply with just:\n```repl\nFINAL(line)\n```" in result.trajectory[1].feedback


def test_text_printed_as_the_answer_is_suggested_as_final_at_once(client_on_server: LLMTestServer) -> None:
    script = Script(root=[repl("print(len(context))"), repl("print('There are 100 ERROR lines.')")])
    result = run(client_on_server, script, max_iterations=2)
    assert "FINAL('There are 100 ERROR lines.')" in result.trajectory[1].feedback


def test_a_sub_call_that_read_context_suggests_ending(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[
            repl("a = llm_query('What is this about?')"),  # no context: no suggestion to end
            repl("answer = llm_query('What fills the disk? ' + context[:300])\nprint(answer)"),
            repl("llm_query('What fills the disk? ' + context[:300])"),  # the answer as the block's value
            repl("print(llm_query('Explain at length: ' + context[:300]) * 100)"),  # a long, unnamed answer
        ],
        child=lambda rec: "logs",
    )
    result = run(client_on_server, script, max_iterations=4)
    blind, named, bare, long = result.trajectory
    assert "answered. If that answer answers the question" not in blind.feedback
    assert "was given part of `context` and answered" in named.feedback
    assert "reply with just:\n```repl\nFINAL_VAR('answer')\n```" in named.feedback
    assert "reply with just:\n```repl\nFINAL('logs')\n```" in bare.feedback
    assert "no variable holds its answer" in long.feedback and "```repl\\nFINAL(answer)" not in long.feedback


def test_names_from_sub_calls() -> None:
    code = "x = 1\nanswer = llm_query('q' + context[:9])\nfor p in ps:\n    r = rlm_query(p)\ny = len(answer)"
    assert names_from_sub_calls(code) == ["answer", "r"]
    assert names_from_sub_calls("a = llm_query_batched(ps)") == ["a"] and names_from_sub_calls("a = (") == []


# -- the prompt's window ----------


def test_the_prompt_states_the_configured_window(
    client_on_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(client_on_server, Script(root=[repl("FINAL(len(context))")]))
    system = client_on_server.requests[0].prompt
    assert "window is 128,000 tokens" in system and "100k" not in system
    monkeypatch.setenv("RLM_CONTEXT_WINDOW", "16384")
    client_on_server.reset()
    with llm.use_session(llm.LLMSession()):  # a new session's client reads the changed environment
        run(client_on_server, Script(root=[repl("FINAL(len(context))")]))
    assert "window is 16,384 tokens: one call reads at most about 44,580 characters" in (
        client_on_server.requests[0].prompt
    )


def test_the_delegation_example_is_for_corpora_only(client_on_server: LLMTestServer) -> None:
    # the example names a real file of the run's corpus, never a made-up one (issue 27 item 4)
    example = 'start, end = context_files["guide/intro.md"]'
    assert example in system_prompt(corpus=True, example_file="guide/intro.md")
    assert "context_files[" not in system_prompt(corpus=False, example_file="guide/intro.md")
    assert "context_files[" not in system_prompt(corpus=True)  # no real name: no example
    run(client_on_server, Script(root=[repl("FINAL(len(context))")]))  # one text: no example
    assert "context_files[" not in client_on_server.requests[0].prompt
    client_on_server.reset()
    client_on_server.reply_with(Script(root=[repl("FINAL(len(context))")]))
    corpus = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "python-reference"
    loaded = ctxmod.load(str(corpus))
    run_rlm("How long?", loaded, options=RunOptions())  # a corpus: the example, with its first file
    first = next(iter(loaded.files))
    assert f"start, end = context_files[{json.dumps(first)}]" in client_on_server.requests[0].prompt
    assert "data/notes.txt" not in client_on_server.requests[0].prompt


def test_bad_window_setting_is_refused(
    client_on_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLM_CONTEXT_WINDOW", "lots")
    with pytest.raises(Exception, match="invalid LLM setting .context_window. = .lots."):
        llm.get_client()


# -- item 12 ----------


def test_jsonl_header_records_the_resolved_root_model(
    client_on_server: LLMTestServer, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")  # only this root (see sandbox/roots.py)
    result = run(client_on_server, Script(root=[repl("FINAL(len(context))")]))
    assert result.model == "test-model"
    result.to_jsonl("run.jsonl")
    head = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[0])
    assert head["model"] == "test-model"


def test_unknown_price_warns_once_per_model_across_cache_hits(
    client_on_server: LLMTestServer, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlm_kernel.llm import pricing

    monkeypatch.setenv("RLM_CACHE", "readwrite")
    monkeypatch.setenv("RLM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(pricing, "_warned", set())
    client_on_server.reply_with(lambda rec: "hi")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        client = llm.get_client()
        for _ in range(3):  # a call, then cache hits
            client.complete("same prompt")
    assert [
        str(w.message).count("test-model") for w in seen if w.category is pricing.UnknownPriceWarning
    ] == [1]


PLAIN_TASK = "How many times does the word 'else' occur in the text below?"
ELSE_TEXT = (
    "if a:\n    x = 1\nelse:\n    x = 2\nwhile b:\n    pass\nelse:\n    done()\nfor c in d:\n    pass\n"
)
ELSE_TEXT += "else:\n    y()"
SEARCH = (
    "hits = [line for line in context.splitlines() if 'else' in line.lower()]\nprint(len(hits)); print(hits)"
)


def test_a_sub_rlm_on_a_plain_count_question_ends_with_the_count(client_on_server: LLMTestServer) -> None:
    # tutorial 4 on the coder model with the plain question: the search printed the task's own line among
    # its hits, the found hint offered that line as FINAL, then a printed line was accepted as the count
    start = len(PLAIN_TASK) + 2
    there = SEARCH.replace("context.splitlines()", f"context[{start}:].splitlines()")
    ask = (
        f"try:\n    a = rlm_query({PLAIN_TASK!r} + '\\n\\n' + {ELSE_TEXT!r})\n"
        "except QueryError as err:\n    a = str(err)\nprint(a)"
    )
    sub = [repl(SEARCH), repl(there), repl("FINAL('else:')"), repl("FINAL('3')")]
    result = run(
        client_on_server, Script(root=[repl(ask), "FINAL(a)"], sub=sub), PLAIN_TASK, max_iterations=4
    )
    turns = result.trajectory[0].calls[0].run["turns"]
    first, second = turns[0]["feedback"], turns[1]["feedback"]
    assert "Do the task on `context[" in first and "Your code counted" not in first
    assert f"FINAL({PLAIN_TASK!r})" not in first  # no FINAL of the task's own line
    assert "Your code counted 3 matching lines" in second and "FINAL('3')" in second
    assert "count the word in each line instead" in second
    assert "rejected" in turns[2]["note"] and "this answer has no number" in turns[2]["note"]
    assert result.trajectory[0].stdout.strip() == "3"
