"""Issue 27 item 4: code that finds the answer ends the run with it, no detour; the gate accepts what is drawn
from `context` and refuses what is not; hints name only what exists. Scripted roots reproduce the runs of
the issue (the needle, the count of 537, `_fold_mime_parameters`, `Final(...)`) against the real sandbox and
client on the local test server."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.derived import DataFlow
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop.driver import run_rlm
from rlm_kernel.rootloop.prompt import chunk_chars, keyword_of, system_prompt
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

_rng = random.Random(27)
_LOG = [
    f"2025-03-0{_rng.randint(1, 9)}T1{_rng.randint(0, 9)}:00:00Z {_rng.choice(['INFO', 'DEBUG', 'WARN'])} "
    f"service={_rng.choice(['auth', 'cart', 'search'])} request served in {_rng.randint(1, 900)} ms"
    for _ in range(600)
]
NEEDLE = _LOG[:400] + ["2025-03-04T12:00:00Z INFO the secret code is 48213"] + _LOG[400:]
HAYSTACK = "\n".join(NEEDLE)
COUNTED = "\n".join(
    f"record {i}: {'status=failed' if (i * 7) % 11 < 5 else 'status=ok'}" for i in range(1, 1183)
)
FAILED = sum(1 for i in range(1, 1183) if (i * 7) % 11 < 5)


def run(server: LLMTestServer, script: Script, question: str, context: object, **options: object):
    server.reply_with(script)
    options.setdefault("best_effort", False)
    loaded = context if isinstance(context, ctxmod.LoadedContext) else ctxmod.load(context, kind="text")
    return run_rlm(question, loaded, options=RunOptions(**options))


# -- the runs of the issue ----------


def test_needle_found_by_code_ends_with_that_answer(client_on_server: LLMTestServer) -> None:
    search = "hits = [l for l in context.splitlines() if 'secret code' in l]\nprint(hits[0][-24:])"
    script = Script(root=[repl(search), "The code is 48213.\nFINAL(48213)"])
    result = run(client_on_server, script, "What is the secret code?", HAYSTACK, max_iterations=4)
    assert result.termination == "final" and result.answer == "48213" and result.iterations == 2
    first = result.trajectory[0]
    assert first.stdout.strip() == "the secret code is 48213"
    # the feedback says to end with what code found, and no sub-call was made (the issue's detour)
    assert "reply with just:\n```repl\nFINAL('the secret code is 48213')\n```" in first.feedback
    assert "No sub-model call is needed" in first.feedback
    assert result.calls == 2  # the two root turns only
    assert "you must call llm_query" not in client_on_server.requests[0].prompt.lower()


def test_a_needle_printed_in_a_list_of_hits_ends_the_run_with_that_line(
    client_on_server: LLMTestServer,
) -> None:
    # protocol/find re-measured on main (db517ff): the prompt's search example prints the count and the
    # hits (two lines); the hint then had no line to copy and the coder model repeated its search
    search = (
        "hits = [line for line in context.splitlines() if 'secret' in line.lower()]\n"
        "print(len(hits)); print(hits[:10])"
    )
    line = "2025-03-04T12:00:00Z INFO the secret code is 48213"
    script = Script(root=[repl(search), repl(f"FINAL({line!r})")])
    result = run(client_on_server, script, "What is the secret code?", HAYSTACK, max_iterations=4)
    first = result.trajectory[0]
    assert first.stdout.strip() == f"1\n[{line!r}]"
    assert f"reply with just:\n```repl\nFINAL({line!r})\n```" in first.feedback
    assert result.termination == "final" and result.answer == line and result.calls == 2  # no detour


def test_a_count_printed_by_code_is_the_answer(client_on_server: LLMTestServer) -> None:
    count = "print(sum(1 for line in context.splitlines() if 'status=failed' in line))"
    script = Script(root=[repl(count), f"FINAL({FAILED})"])
    question = "How many records have status=failed?"
    result = run(client_on_server, script, question, COUNTED, max_iterations=4)
    assert result.termination == "final" and result.answer == str(FAILED) == "537"
    assert f"FINAL('{FAILED}')" in result.trajectory[0].feedback


def test_a_sub_model_contradicting_code_is_not_urged_as_the_end(client_on_server: LLMTestServer) -> None:
    # the issue's needle run: after code found the code, a sub-call over the wrong part of the context
    # invented a timestamp, and the feedback told the root to end with it
    search = "hits = [l for l in context.splitlines() if 'secret code' in l]\nprint(hits[0][-24:])"
    ask = "answer = llm_query('What is the secret code? ' + context[:1000])\nprint(answer)"
    script = Script(
        root=[repl(search), repl(ask), "FINAL(the secret code is 48213)"],
        child=lambda rec: "2025-03-01T00:00:00Z",
    )
    result = run(client_on_server, script, "What is the secret code?", HAYSTACK, max_iterations=4)
    second = result.trajectory[1]
    assert "FINAL_VAR('answer')" not in second.feedback and "end the run now" not in second.feedback
    assert "does not contain what your code found in `context` at turn 1" in second.feedback
    assert "FINAL('the secret code is 48213')" in second.feedback
    assert result.termination == "final" and result.answer == "the secret code is 48213"


def test_final_of_the_preloaded_answer_dict_is_refused(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `_fold_mime_parameters`: the hint's template FINAL(answer) met the preloaded reference-style dict and
    # the run ended with {'content': None, 'ready': False}
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")  # only this root (see sandbox/roots.py)
    (tmp_path / "email").mkdir()
    (tmp_path / "email" / "_header_value_parser.py").write_text(
        "import re\n\n\ndef _fold_mime_parameters(part, lines, maxlen):\n    pass\n"
    )
    (tmp_path / "email" / "utils.py").write_text("def formataddr(pair):\n    return pair\n")
    corpus = ctxmod.load(str(tmp_path / "email"))
    find = (
        "for path, (s, e) in context_files.items():\n"
        "    if 'def _fold_mime_parameters' in context[s:e]:\n"
        "        where = path\n"
        "print(where)"
    )
    script = Script(
        root=[repl(find), "FINAL(answer)", repl("FINAL(answer)"), "FINAL_VAR(where)"],
    )
    question = "Which file defines `_fold_mime_parameters`?"
    result = run(client_on_server, script, question, corpus, max_iterations=4)
    path = next(p for p in corpus.files if p.endswith("_header_value_parser.py"))
    assert result.termination == "final" and result.answer == path
    for turn in result.trajectory[1:3]:
        assert "rejected: `answer` is the reference-style dict" in turn.note
    assert "FINAL(answer)" not in result.trajectory[0].feedback
    prompt = client_on_server.requests[0].prompt
    assert f'context_files["{next(iter(corpus.files))}"]' in prompt and "data/notes.txt" not in prompt


def test_near_miss_final_names_get_did_you_mean(client_on_server: LLMTestServer) -> None:
    # the join run: `Final(...)` six times, fed back as a bare NameError
    count = "n = sum('status=failed' in line for line in context.splitlines())\n"
    script = Script(
        root=[
            repl(count + "Final(n)"),
            repl("final_var('n')"),
            "The answer:\nFinal(537)",
            repl("FINALVAR('n')"),
            repl("FINAL(n)"),
        ]
    )
    result = run(client_on_server, script, "How many failed?", COUNTED, max_iterations=5)
    assert result.termination == "final" and result.answer == str(FAILED)
    first, second, prose, joined = result.trajectory[:4]
    assert "Did you mean: 'FINAL'?" in first.error  # CPython's rule, as a person's cell shows it
    assert "`Final` does not exist: did you mean FINAL?" in first.feedback
    assert "`final_var` does not exist: did you mean FINAL_VAR?" in second.feedback
    assert "`Final(...)` is not read as the end of the run: did you mean FINAL(...)?" in prose.feedback
    assert "did you mean FINAL_VAR?" in joined.feedback


def test_a_literal_or_empty_answer_is_refused_after_reading_context(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[
            repl("print(len(context))"),
            repl("city = 'Paris'\nFINAL(city)"),  # a value no output or sub-call produced
            repl("FINAL_VAR('city')"),
            repl("empty = [l for l in context.splitlines() if 'no such thing' in l]\nFINAL(empty)"),
            repl("FINAL('')"),
            repl("shown = str(empty)\nFINAL(shown)"),  # displays as [] (a search that found nothing)
            repl("hit = None\nfor l in context.splitlines():\n if 'zz' in l: hit = l\nFINAL(hit)"),
        ]
    )
    result = run(client_on_server, script, "Which city?", COUNTED, max_iterations=7)
    assert result.termination == "max_iterations"
    notes = [t.note for t in result.trajectory]
    assert all("rejected" in n for n in notes[1:3]) and "was not computed from `context`" in notes[1]
    assert all("the answer is empty" in n for n in notes[3:7]), notes
    assert "displays as []" in notes[5] and "displays as None" in notes[6]
    assert "Search `context` again" in result.trajectory[6].feedback


def test_a_value_from_a_sub_call_given_context_is_accepted(client_on_server: LLMTestServer) -> None:
    ask = "part = context[:2000]\nmood = llm_query('What is the mood of these records? ' + part)"
    script = Script(root=[repl(ask), "FINAL(The mood is calm.)"], child=lambda rec: "calm")
    result = run(client_on_server, script, "What is the mood?", COUNTED, max_iterations=2)
    assert result.termination == "final" and result.answer == "The mood is calm."


def _email_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ctxmod.LoadedContext:
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")  # only this root (see sandbox/roots.py)
    (tmp_path / "email").mkdir()
    (tmp_path / "email" / "__init__.py").write_text('"""A package for email."""\n')
    (tmp_path / "email" / "_header_value_parser.py").write_text(
        "import re\n\n\ndef _fold_mime_parameters(part, lines, maxlen):\n    pass\n\n\n"
        "def _refold(part):\n    _fold_mime_parameters(part, [], 78)\n"
    )
    (tmp_path / "email" / "utils.py").write_text("def formataddr(pair):\n    return pair\n")
    return ctxmod.load(str(tmp_path / "email"))


def test_which_file_gets_the_file_its_printed_lines_are_in(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # protocol/email-where on the coder model: the search printed the `def` line, and the model, which cannot
    # see which file a line is in, ended with a guessed file (`email/__init__.py`) seven times
    corpus = _email_corpus(tmp_path, monkeypatch)
    path = next(p for p in corpus.files if p.endswith("_header_value_parser.py"))
    first = next(iter(corpus.files))
    search = (
        "hits = [line for line in context.splitlines() if '_fold_mime_parameters' in line.lower()]\n"
        "print(len(hits)); print(hits[:10])"
    )
    script = Script(
        root=[
            repl(search),
            repl(f"FINAL({first!r})"),  # a path it was shown, not one code found: refused
            repl("FINAL('def _fold_mime_parameters(part, lines, maxlen):')"),  # printed, but no file: a step
            repl(f"FINAL({path!r})"),
        ]
    )
    question = "Which file defines `_fold_mime_parameters`?"
    result = run(client_on_server, script, question, corpus, max_iterations=4)
    hint = result.trajectory[0].feedback
    assert f"the lines it printed are in the corpus file {path!r}" in hint
    assert f"FINAL({path!r})" in hint
    notes = [t.note for t in result.trajectory]
    assert "not computed from `context`" in notes[1] and "names no file" in notes[2]
    assert result.termination == "final" and result.answer == path and result.iterations == 4


def test_the_file_count_the_kernel_stated_is_evidence(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # protocol/email-files: the first message says how many files the corpus has; the best-effort answer
    # "29 files" was right and no FINAL of it could be accepted. Another number still is refused.
    corpus = _email_corpus(tmp_path, monkeypatch)
    script = Script(root=[repl("print(len(context))"), "FINAL(4 files)", "FINAL(3 files)"])
    result = run(
        client_on_server, script, "How many files are in the email package?", corpus, max_iterations=3
    )
    assert "It is a corpus of 3 file(s)" in client_on_server.requests[0].prompt
    assert "rejected" in result.trajectory[1].note
    assert result.termination == "final" and result.answer == "3 files"


def test_a_line_count_printed_above_its_hits_is_offered_as_the_answer(
    client_on_server: LLMTestServer,
) -> None:
    # protocol/count: the search printed 215 and ten long lines (too long for the found hint); a count of
    # lines is offered only when the question counts lines, not files
    levels = ["INFO", "DEBUG", "ERROR", "WARN", "INFO"]
    logs = "\n".join(
        f"2026-03-0{i % 9 + 1} 10:00:{i % 60:02d} {levels[i % 5]:5} [cart] request {i} served after a wait"
        for i in range(500)
    )
    errors = sum(" ERROR " in line for line in logs.splitlines())
    search = (
        "hits = [line for line in context.splitlines() if 'error' in line.lower()]\n"
        "print(len(hits)); print(hits[:10])"
    )
    script = Script(root=[repl(search), f"FINAL({errors})"])
    result = run(client_on_server, script, "How many log lines have the level ERROR?", logs, max_iterations=2)
    assert f"Your code counted {errors} matching lines" in result.trajectory[0].feedback
    assert f"FINAL('{errors}')" in result.trajectory[0].feedback
    assert result.termination == "final" and result.answer == str(errors) == "100"
    other = run(
        client_on_server, Script(root=[repl(search)]), "How many files are there?", logs, max_iterations=1
    )
    assert "Your code counted" not in other.trajectory[0].feedback


# -- the prompt ----------


def test_the_prompt_says_code_first_and_offers_the_analysis_helpers() -> None:
    text = system_prompt(16384, question="What is the secret code?")
    assert "Use code first whenever code can answer" in text and "must call" not in text
    for helper in ("find_relevant(context,", "extract_functions(", "map_reduce(context,"):
        assert helper in text
    size = chunk_chars(16384)
    assert size == 35000 and f"n_chunks=len(context) // {size} + 1" in text
    assert f"context[i:i + {size}]" in text and "context[i:i + 101000]" not in system_prompt(128_000)
    assert "if 'secret' in line.lower()" in text and keyword_of("How many are there?") == "keyword"
    # the example's word is the question's most distinctive one, lower case (the model copies `.lower()`)
    assert keyword_of("How many log lines have the level ERROR?") == "error"
    assert keyword_of("Which file defines `_fold_mime_parameters`?") == "_fold_mime_parameters"
    assert "FINAL(answer)" not in text  # `answer` is the preloaded reference-style dict


def test_the_search_example_greps_the_question_s_rarest_word_in_the_context() -> None:
    logs = "\n".join(f"12:00 [maintenance] maintenance window {i} done" for i in range(50))
    logs += "\n12:01 [vault] the maintenance override code is 4411-DELTA"
    question = "What is the maintenance override code mentioned in the log?"
    assert keyword_of(question) == "maintenance"  # without the text: the longest word
    assert keyword_of(question, logs) == "override"  # one line of 51 has it
    text = system_prompt(16384, question=question, context=logs)
    assert "if 'override' in line.lower()" in text
    # a word the text never has is no search word; a quoted term or an upper-case word still comes first
    assert keyword_of("Which window mentions the zeppelin?", logs) == "window"
    assert keyword_of("How many lines have the level DONE?", logs) == "done"


# -- the data flow ----------


def test_the_data_flow_follows_values_drawn_from_context() -> None:
    flow = DataFlow()
    flow.add_block(
        "count = 0\n"
        "for line in context.splitlines():\n"
        "    if 'x' in line:\n"
        "        count += 1\n"
        "found = []\n"
        "for line in ctx.split():\n"
        "    found.append(line)\n"
        "a = llm_query('q' + context[:10])\n"
        "b = llm_query('q')\n"
        "city = 'Paris'\n"
        "n = len(context_0)\n"
        "m = n * 2\n"
    )
    assert {"count", "found", "a", "n", "m", "line"} <= flow.names
    assert not {"b", "city"} & flow.names
    flow.add_block("m = 42")  # a literal again: no longer drawn from the context
    assert "m" not in flow.names


# -- the ablation's targets ----------


def test_the_ablation_summary_counts_the_issue_targets() -> None:
    from benchmarks.rootloop_ablation import summary

    def row(stdout: str, answer: str, score: float, termination: str = "final", accepted: bool = True):
        turns = [{"stdout": stdout}]
        return {"expected": "7034-DELTA", "turns": turns, "answer": answer, "score": score,
                "termination": termination, "accepted": accepted}  # fmt: skip

    rows = {
        "found, ended with it": row("code is 7034-DELTA", "7034-DELTA", 1.0),
        "found, wrong answer accepted": row("code is 7034-delta", "{'content': None}", 0.0),
        "not found, best effort": row("nothing", "1234", 0.0, "max_iterations", False),
    }
    got = summary(rows)
    assert (got["runs"], got["found_by_code"], got["ended_with_it"]) == (3, 2, 1)
    assert (got["accepted"], got["right_accepted"], got["mean_score"]) == (2, 1, 0.333)


def test_a_search_that_cannot_match_is_named_and_no_hits_is_not_an_answer(
    client_on_server: LLMTestServer,
) -> None:
    # the count run, before and after the prompt change: `'ERROR' in line.lower()` printed 0 hits
    search = "hits = [l for l in context.splitlines() if 'FAILED' in l.lower()]\n"
    search += "print(len(hits)); print(hits[:10])"
    script = Script(root=[repl(search)])
    result = run(client_on_server, script, "How many records are FAILED?", COUNTED, max_iterations=1)
    feedback = result.trajectory[0].feedback
    # the loop re-runs the block with 'failed' in that turn (rootloop/search_fix.py): the count code finds
    assert result.trajectory[0].stdout.startswith(
        "0\n[]\n[your block re-run with 'failed' in place of 'FAILED']\n537\n"
    )
    assert "looked for 'FAILED' in lower-cased text (lower()), so it could never match" in feedback
    assert "end the run now" not in feedback  # the first block's nothing-found is not offered as the answer


def test_the_best_effort_answer_is_read_from_a_final_in_a_block(client_on_server: LLMTestServer) -> None:
    # the count run ended with the best-effort answer '```repl\nFINAL("2")\n```', the block as text
    script = Script(root=[repl("print(len(context))"), repl('FINAL("2")')])
    result = run(client_on_server, script, "How many failed?", COUNTED, max_iterations=1, best_effort=True)
    assert result.termination == "max_iterations" and result.answer_kind == "best_effort"
    assert result.answer == "2"


JOIN = "\n".join(
    ["x"] * 50
    + ["badge 35415 was issued to Marta Quist"]
    + ["y"] * 50
    + ["badge 35415 opened the door of room 3F"]
    + ["z"] * 50
)
JOIN_QUESTION = "Which room's door did Marta Quist's badge open?"


def test_a_first_hop_line_gets_the_next_search_not_an_end(client_on_server: LLMTestServer) -> None:
    # the join run ended with its first hop's line as the answer to "which room's door ..."; a generic "search
    # for a name or number the output gave" was not acted on, so the hint spells out the search
    search = "hits = [l for l in context.splitlines() if 'marta' in l.lower()]\nprint(hits)"
    result = run(client_on_server, Script(root=[repl(search)]), JOIN_QUESTION, JOIN, max_iterations=1)
    feedback = result.trajectory[0].feedback
    assert f"names no room/door, which this question asks for: {JOIN_QUESTION!r}" in feedback
    assert "if '35415' in line]" in feedback and "FINAL(" not in feedback.split("names no room")[1]


def test_a_step_is_refused_and_the_second_hop_ends_the_run(client_on_server: LLMTestServer) -> None:
    # protocol/join: "... in the images room." had its number printed by code and was accepted ("images" was
    # the model's own guess); the first hop's line itself names no room and is a step, not the answer
    search = "hits = [l for l in context.splitlines() if 'marta' in l.lower()]\nprint(hits)"
    hop = "hits = [line for line in context.splitlines() if '35415' in line]\nprint(len(hits)); print(hits)"
    script = Script(
        root=[
            repl(search),
            "FINAL(The badge 35415 was issued to Marta Quist in the images room.)",  # a long shared piece
            repl('FINAL("badge 35415 was issued to Marta Quist in the images room")'),
            "FINAL(Badge 35415 was issued to Marta Quist.)",  # printed, but no room: a step
            repl(hop),
            "FINAL('badge 35415 opened the door of room 3F')",
        ]
    )
    result = run(client_on_server, script, JOIN_QUESTION, JOIN, max_iterations=6)
    notes = [t.note for t in result.trajectory]
    assert all("rejected" in n for n in notes[1:4])
    assert "names no room/door" in notes[3] and "not computed from `context`" in notes[1]
    assert "FINAL('badge 35415 opened the door of room 3F')" in result.trajectory[4].feedback
    assert result.termination == "final" and result.answer == "badge 35415 opened the door of room 3F"
    assert result.iterations == 6


def test_a_file_count_question_is_shown_context_files_and_ends_with_the_count(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # protocol/email-files on the coder model: it searched the lines for 'email' eight times (203 lines)
    corpus = _email_corpus(tmp_path, monkeypatch)
    search = "hits = [line for line in context.splitlines() if 'email' in line.lower()]\nprint(len(hits))"
    count = "print(len(context_files)); print(list(context_files)[:5])"
    script = Script(root=[repl(search), repl(count), "FINAL('3')"])
    question = "How many files are in the email package?"
    result = run(client_on_server, script, question, corpus, max_iterations=3)
    first, second = result.trajectory[0].feedback, result.trajectory[1].feedback
    assert "Lines are not files" in first and "print(len(context_files))" in first
    assert "Your code counted 3 files in `context_files`" in second and "FINAL('3')" in second
    assert result.termination == "final" and result.answer == "3" and result.iterations == 3
    other = run(
        client_on_server, Script(root=[repl(search)]), "Which file defines `f`?", corpus, max_iterations=1
    )
    assert "Lines are not files" not in other.trajectory[0].feedback


def test_a_repeated_search_after_a_final_offer_gets_the_offer_alone(client_on_server: LLMTestServer) -> None:
    # long-context AFTER run, 2026-12-06 (coder model): 3 of 12 needle runs re-ran the search that had
    # found the line seven times, each feedback showing the same output again; the repeat's feedback is now
    # the FINAL offer alone, without the output
    search = (
        "hits = [line for line in context.splitlines() if 'secret' in line.lower()]\n"
        "print(len(hits)); print(hits[:10])"
    )
    line = "2025-03-04T12:00:00Z INFO the secret code is 48213"
    script = Script(root=[repl(search), repl(search), repl(f"FINAL({line!r})")])
    result = run(client_on_server, script, "What is the secret code?", HAYSTACK, max_iterations=5)
    first, second = result.trajectory[0], result.trajectory[1]
    offer = f"reply with just:\n```repl\nFINAL({line!r})\n```"
    assert offer in first.feedback and first.stdout.strip() in first.feedback
    assert second.feedback.startswith("Turn 2 ran the same block as turn 1 and printed the same output")
    assert second.feedback.endswith(offer) and line not in second.feedback.replace(f"FINAL({line!r})", "")
    assert result.termination == "final" and result.answer == line and result.calls == 3


def test_a_repeated_block_without_an_offer_keeps_the_full_feedback(client_on_server: LLMTestServer) -> None:
    code = "print(len(context))"
    script = Script(root=[repl(code), repl(code), "FINAL(1)"])
    result = run(client_on_server, script, "What is the secret code?", HAYSTACK, max_iterations=3)
    second = result.trajectory[1]
    assert second.feedback.startswith("Output of turn 2:") and "same as the one in turn 1" in second.feedback


def test_which_file_defines_gets_the_file_of_the_defining_line_among_uses(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # long-context AFTER run, 2026-12-06 (coder model, code/32K-where-0): the search printed five hits in
    # three files, `class MIMENonMultipart(MIMEBase):` among them; no hint came, and the model went back to a
    # search that could not match until the turn limit
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")
    mime = tmp_path / "email" / "mime"
    mime.mkdir(parents=True)
    (mime / "__init__.py").write_text("")
    (mime / "nonmultipart.py").write_text(
        "from email.mime.base import MIMEBase\n\n__all__ = ['MIMENonMultipart']\n\n\n"
        "class MIMENonMultipart(MIMEBase):\n    pass\n"
    )
    (mime / "text.py").write_text(
        "from email.mime.nonmultipart import MIMENonMultipart\n\n\nclass MIMEText(MIMENonMultipart):\n"
        "    def __init__(self, text):\n        MIMENonMultipart.__init__(self, 'text', 'plain')\n"
    )
    corpus = ctxmod.load(str(tmp_path / "email"))
    path = next(p for p in corpus.files if p.endswith("nonmultipart.py"))
    search = (
        "hits = [line for line in context.splitlines() if 'mimenonmultipart' in line.lower()]\n"
        "print(len(hits)); print(hits[:10])"
    )
    script = Script(root=[repl(search), repl(f"FINAL({path!r})")])
    result = run(client_on_server, script, "Which file defines `MIMENonMultipart`?", corpus, max_iterations=3)
    first = result.trajectory[0]
    assert "class MIMENonMultipart(MIMEBase):" in first.stdout
    assert len({p for p in corpus.files if "MIMENonMultipart" in corpus.value[slice(*corpus.files[p])]}) > 1
    assert f"the lines it printed are in the corpus file {path!r}" in first.feedback
    assert f"reply with just:\n```repl\nFINAL({path!r})\n```" in first.feedback
    assert result.termination == "final" and result.answer == path and result.iterations == 2


def test_defining_lines_are_definitions_of_the_quoted_name() -> None:
    from rlm_kernel.rootloop.found import defining_lines

    lines = [
        "__all__ = ['Widget']",
        "class Widget(Base):",
        "from pkg.widget import Widget",
        "class Gadget(Widget):",
        "Widget = make()",
        "    def Widget_helper(self):",
    ]
    assert defining_lines(lines, "Which file defines `Widget`?") == ["class Widget(Base):", "Widget = make()"]
    assert defining_lines(lines, "Which file defines Widget?") == []
