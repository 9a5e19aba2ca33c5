"""In-process tests of the block-extraction rule and prose FINAL detection (balanced, quoted, fenced)."""

from __future__ import annotations

from rlm_kernel.rootloop.reply_parse import extract, extract_blocks, find_prose_final


def test_single_repl_block_with_prose() -> None:
    reply = "Let me look.\n```repl\nprint(len(context))\n```\nThen I'll decide."
    assert extract_blocks(reply) == (["print(len(context))"], {})


def test_missing_language_tag() -> None:
    assert extract_blocks("```\nx = 1\nprint(x)\n```") == (["x = 1\nprint(x)"], {})


def test_repl_wins_over_python_and_untagged_which_are_counted() -> None:
    reply = "```python\na = 1\n```\n```\nb = 2\n```\n```repl\nc = 3\n```"
    assert extract_blocks(reply) == (["c = 3"], {"python": 1, "untagged": 1})


def test_python_wins_over_untagged() -> None:
    assert extract_blocks("```\nb = 2\n```\n```py\nc = 3\n```") == (["c = 3"], {"untagged": 1})


def test_several_repl_blocks_all_run_in_order() -> None:
    reply = "```repl\na = 1\n```\ntext\n```repl\nb = 2\n```\n```repl\nc = 3\n```"
    assert extract_blocks(reply) == (["a = 1", "b = 2", "c = 3"], {})
    assert extract(reply).code == "a = 1\n\nb = 2\n\nc = 3"


def test_other_tags_never_run() -> None:
    assert extract_blocks("```text\nhello\n```\n```json\n{}\n```") == ([], {})
    assert extract_blocks("no code at all") == ([], {})
    assert extract_blocks("```repl\n\n```") == ([], {})


def test_unclosed_fence_runs_to_end() -> None:
    assert extract_blocks("ok:\n```repl\nx = 1\ny = 2") == (["x = 1\ny = 2"], {})


def test_prose_final_forms() -> None:
    assert find_prose_final("Done.\nFINAL(Paris)").value == "Paris"
    assert find_prose_final('FINAL("the answer is 42")').value == "the answer is 42"
    f = find_prose_final("I computed it.\nFINAL_VAR(answer)\n")
    assert (f.kind, f.value) == ("FINAL_VAR", "answer")
    assert find_prose_final("FINAL_VAR('answer')").value == "answer"
    assert find_prose_final("FINAL(line one\nline two)").value == "line one\nline two"


def test_final_inside_code_is_not_prose() -> None:
    reply = "```repl\nFINAL(x)\n```"
    assert find_prose_final(reply) is None
    assert extract(reply).code == "FINAL(x)"


def test_final_mid_sentence_is_not_final() -> None:
    assert find_prose_final("I will call FINAL(x) once verified.") is None


def test_extract_combines() -> None:
    got = extract("Step.\n```repl\nx = llm_query('q')\n```\nFINAL_VAR(x)")
    assert got.code == "x = llm_query('q')" and got.final.kind == "FINAL_VAR" and got.ignored_blocks == 0


def test_prose_final_stops_at_its_own_closing_parenthesis() -> None:
    # issue 17 item 12: the remark in brackets after FINAL used to become part of the answer
    assert find_prose_final("FINAL(seven)\n\n(I checked this.)").value == "seven"
    assert find_prose_final("Done.\nFINAL(seven) (checked twice)").value == "seven"


def test_prose_final_nested_and_quoted_parentheses() -> None:
    assert find_prose_final("FINAL(f(x) is 3 (approximately))").value == "f(x) is 3 (approximately)"
    assert find_prose_final('FINAL("a ) inside quotes") and more (text)').value == "a ) inside quotes"
    assert find_prose_final("FINAL('It (the line) says hi')\n(remark)").value == "It (the line) says hi"
    assert find_prose_final("FINAL(It's seven)").value == "It's seven"


def test_prose_final_multiline_balanced() -> None:
    reply = "Answer:\nFINAL(first line\n(second) line\nthird)\n\n(note after)"
    assert find_prose_final(reply).value == "first line\n(second) line\nthird"


def test_unclosed_prose_final_is_not_an_answer() -> None:
    assert find_prose_final("FINAL(cut off by the token limit") is None


def test_final_in_a_fence_that_does_not_run_is_read() -> None:
    # a ```text block (never runs) and a ```python block beside a ```repl block (not run)
    assert find_prose_final("Result:\n```text\nFINAL(42)\n```").value == "42"
    reply = "```repl\nn = 1\n```\n```python\nFINAL(n)\n```"
    got = extract(reply)
    assert got.blocks == ("n = 1",) and got.ignored == {"python": 1} and got.final.value == "n"
    # an untagged block that runs is code, not prose
    assert find_prose_final("```\nFINAL(x)\n```") is None


def test_final_in_prose_next_to_a_code_block() -> None:
    got = extract("```repl\nx = llm_query('q')\n```\nFINAL(x is (probably) 4)\n(remark)")
    assert got.blocks == ("x = llm_query('q')",) and got.final.value == "x is (probably) 4"


def test_a_fenced_final_that_is_not_python_is_read_as_prose() -> None:
    # issue 17 item 4: models put their answer in a fence as text; it used to fail as a SyntaxError
    for reply in ("```repl\nFINAL(The answer is 3)\n```", "Done:\n```\nFINAL(The answer is 3)\n```"):
        got = extract(reply)
        assert got.blocks == () and (got.final.kind, got.final.value) == ("FINAL", "The answer is 3")
    got = extract('```repl\nFINAL("done")\n```')  # valid Python stays code
    assert got.blocks == ('FINAL("done")',) and got.final is None


def test_final_after_a_label_with_a_colon() -> None:
    got = extract("```repl\nx = 1\n```\nSo the answer is: FINAL(x)")
    assert got.code == "x = 1" and got.final.value == "x"
    assert find_prose_final("Final answer: **FINAL(42)**").value == "42"
    assert find_prose_final("Final answer: FINAL_VAR(total)").kind == "FINAL_VAR"
    assert find_prose_final("ratio 3:4 then I call FINAL(x) later") is None
