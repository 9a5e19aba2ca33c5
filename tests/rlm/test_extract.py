"""In-process tests of the block-extraction rule and prose FINAL detection."""

from __future__ import annotations

from rlm_kernel.rlm.extract import extract, extract_block, find_prose_final


def test_single_repl_block_with_prose() -> None:
    reply = "Let me look.\n```repl\nprint(len(context))\n```\nThen I'll decide."
    assert extract_block(reply) == ("print(len(context))", 0)


def test_missing_language_tag() -> None:
    assert extract_block("```\nx = 1\nprint(x)\n```") == ("x = 1\nprint(x)", 0)


def test_repl_wins_over_python_and_untagged() -> None:
    reply = "```python\na = 1\n```\n```\nb = 2\n```\n```repl\nc = 3\n```"
    assert extract_block(reply) == ("c = 3", 0)


def test_python_wins_over_untagged() -> None:
    assert extract_block("```\nb = 2\n```\n```py\nc = 3\n```") == ("c = 3", 0)


def test_several_blocks_first_runs_rest_counted() -> None:
    reply = "```repl\na = 1\n```\ntext\n```repl\nb = 2\n```\n```repl\nc = 3\n```"
    assert extract_block(reply) == ("a = 1", 2)


def test_other_tags_never_run() -> None:
    assert extract_block("```text\nhello\n```\n```json\n{}\n```") == (None, 0)
    assert extract_block("no code at all") == (None, 0)
    assert extract_block("```repl\n\n```") == (None, 0)


def test_unclosed_fence_runs_to_end() -> None:
    assert extract_block("ok:\n```repl\nx = 1\ny = 2") == ("x = 1\ny = 2", 0)


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
