"""Which spans of `context` a sub-call's prompt holds (`prompt_spans.spans_in`), and the evidence picked for
an answer among many sub-call items (`evidence.for_run`): right on a 10 MB corpus loaded from real files,
and cheap — bounded by the searches its caps allow, measured against plain `str.find` in the same run."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from benchmarks.bench_evidence import FACT, build, seen_items
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.evidence import MAX_EXAMINED, Seen, for_run
from rlm_kernel.repl.prompt_spans import MAX_SEARCHES, spans_in
from rlm_kernel.repl.state import ChildCall

QUESTION = "When was the lease signed?"


def _text(n: int, seed: int = 3) -> str:
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 8))) for _ in range(400)]
    return "\n".join(" ".join(rng.choice(words) for _ in range(10)) for _ in range(n))


def test_slices_of_the_context_are_found_exactly_in_order() -> None:
    context = _text(3000)
    a, b, c, d = 10_123, 14_000, 120_000, 120_070
    prompt = "Read these and answer.\nFirst:\n" + context[a:b] + "\n--\nthen:" + context[c:d] + "\nAnswer:"
    assert spans_in(prompt, context) == [(a, b), (c, d)]
    assert spans_in("The model's own words, " * 40, context) == []
    assert spans_in(context[500:530], context) == []  # shorter than MIN_SPAN: a coincidence, not a slice


def test_a_slice_after_long_prose_and_a_repeated_line() -> None:
    context = _text(3000)
    prose = "An instruction the model wrote at length, not from the text. " * 60
    assert spans_in(prose + context[50_000:52_000], context) == [(50_000, 52_000)]
    line = "the same header line repeats in every file of the corpus\n"
    twice = line + _text(5, seed=7) + "\n" + line + context[:3000]
    where = twice.rindex(line)
    assert spans_in(line + context[:1000], twice) == [(where, where + len(line) + 1000)]  # the longer place


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - a LoadedContext
    return build(tmp_path_factory.mktemp("ten") / "c", 10)


def test_evidence_among_two_thousand_items_on_ten_mb(big) -> None:  # noqa: ANN001
    seen = seen_items(big, 2000)
    answer = "The lease was signed on 14 March 1887."
    started = time.process_time()
    found = for_run(answer, QUESTION, seen, big)
    took = time.process_time() - started
    [one] = found
    fact = big.value.index(FACT)
    assert one["item"] == 1001 and one["call"] == "llm_query_batched" and one["by"] == "sub-call"
    assert one["span"][0] <= fact < fact + len(FACT) <= one["span"][1]
    assert one["path"].endswith("part050.txt") and one["excerpt"] == FACT
    start, _ = big.files[one["path"]]
    line = big.value.count("\n", start, fact) + 1
    assert one["line"] <= line <= one["end_line"]
    misses = _misses(big.value, 8)
    assert took < 40 * misses + 0.5, (took, misses)  # a handful of prompts searched, not 2,000


def test_the_worst_case_is_bounded_by_the_caps(big) -> None:  # noqa: ANN001
    prose = "This prompt is the model's own prose and holds no context at all. " * 120
    call = ChildCall("llm_query_batched", "", True, saw_context=True)
    blind = [Seen(call, [(n, (prose,), "March 1887") for n in range(1, 2001)])]
    started = time.process_time()
    assert for_run("The lease was signed on 14 March 1887.", QUESTION, blind, big) == []
    took = time.process_time() - started
    bound = _misses(big.value, MAX_EXAMINED * MAX_SEARCHES)
    assert took < 1.5 * bound + 0.3, (took, bound)


def _misses(text: str, n: int) -> float:
    """CPU time of `n` searches that find nothing in `text` (each reads all of it)."""
    started = time.process_time()
    for i in range(n):
        text.find(f"no such probe {i} anywhere in it")
    return time.process_time() - started


def test_no_evidence_without_a_text_context_or_words_in_common(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = ChildCall("llm_query", "", True, saw_context=True)
    seen = [Seen(call, [(1, ("x" * 100,), "It closed in 1921.")])]
    assert for_run("1921", "When?", seen, object()) == []
    (tmp_path / "a.txt").write_text("The cobalt mine closed in 1921, the ledger says, and never opened.\n")
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")
    loaded = ctxmod.load(str(tmp_path / "a.txt"))
    prompt = "Read: " + loaded.value[loaded.files[str(tmp_path / "a.txt")][0] :]
    said = [Seen(call, [(1, (prompt,), "Nothing about that.")])]
    assert for_run("1921", "When did the mine close?", said, loaded) == []
    told = [Seen(call, [(1, (prompt,), "It closed in 1921.")])]
    [one] = for_run("1921", "When did the mine close?", told, loaded)
    assert one["line"] == 1 and "1921" in one["excerpt"]
