"""map_reduce against the real LLM client and the local test server (SPEC-01.01-.06, .19, .21)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlm_kernel import llm
from rlm_kernel.analysis import AnalysisInputError, MapReduceError, map_reduce
from rlm_kernel.analysis.chunking import split_even
from rlm_kernel.analysis.map_reduce import MAX_CHUNK_CHARS, MAX_REDUCE_CHARS, fill
from tests.analysis.conftest import TIER_MODELS
from tests.llm_server import Fault, LLMTestServer, RecordedRequest

MAP = "COUNT the word apple in this text:\n{chunk}"
REDUCE = "SUM these counts:\n{results}"


def counting(req: RecordedRequest) -> str:
    """Map: occurrences of 'apple' in the chunk. Reduce: the sum of every count after a part separator."""
    text = req.last_user
    if text.startswith("COUNT"):
        return str(len(re.findall(r"\bapple\b", text.split("\n", 1)[1])))
    if text.startswith("SUM"):
        return str(sum(int(n) for n in re.findall(r"--- part \d+ ---\n(\d+)", text)))
    return "?"


def maps(server: LLMTestServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.last_user.startswith("COUNT")]


def reduces(server: LLMTestServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.last_user.startswith("SUM")]


def test_spec_01_01_map_reduce_returns_the_reduce_answer_as_str(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(counting)
    out = map_reduce("apple pear\napple\nplum apple\n", MAP, REDUCE, n_chunks=2)
    assert out == "3" and isinstance(out, str)


def test_spec_01_02_content_partitioned_into_n_roughly_equal_parts(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(counting)
    content = "".join(f"line {i} apple\n" for i in range(1000))
    assert map_reduce(content, MAP, REDUCE, n_chunks=7) == "1000"
    chunks = [r.last_user.split("\n", 1)[1] for r in maps(session_llm)]
    assert len(chunks) == 7
    assert sorted("".join(chunks)) == sorted(content)  # every character mapped exactly once
    sizes = [len(c) for c in chunks]
    assert max(sizes) - min(sizes) <= len("line 999 apple\n")  # cut at line ends, equal to within a line
    assert all(c.endswith("\n") for c in chunks)


def test_spec_01_03_map_calls_run_in_parallel_through_the_batch_path(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(counting)
    session_llm.latency = 0.3
    events: list[str] = []
    unsubscribe = llm.bus.subscribe(lambda e: events.append(e.kind))
    try:
        map_reduce("apple\n" * 80, MAP, REDUCE, n_chunks=8)
    finally:
        unsubscribe()
    assert session_llm.max_in_flight >= 4
    assert "batch_start" in events and "batch_end" in events


def test_spec_01_04_reduce_receives_every_map_result_in_order(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(lambda r: "R" if r.last_user.startswith("SUM") else f"<{r.last_user[-2]}>")
    out = map_reduce("a\nb\nc\nd\n", "{chunk}", REDUCE, n_chunks=4)
    assert out == "R"
    (reduce,) = reduces(session_llm)
    assert [m for m in re.findall(r"<(\w)>", reduce.last_user)] == ["a", "b", "c", "d"]
    assert "--- part 1 ---" in reduce.last_user and "--- part 4 ---" in reduce.last_user


@pytest.mark.parametrize(
    ("model", "map_model", "reduce_model"),
    [
        ("auto", TIER_MODELS["fast"], TIER_MODELS["powerful"]),
        ("fast", TIER_MODELS["fast"], TIER_MODELS["fast"]),
        ("balanced", TIER_MODELS["balanced"], TIER_MODELS["balanced"]),
        ("powerful", TIER_MODELS["powerful"], TIER_MODELS["powerful"]),
        ("my-literal-model", "my-literal-model", "my-literal-model"),
    ],
)
def test_spec_01_05_model_tier_selects_the_configured_model_for_map_and_reduce(
    session_llm: LLMTestServer, model: str, map_model: str, reduce_model: str
) -> None:
    session_llm.reply_with(counting)
    assert map_reduce("apple\napple\napple\n", MAP, REDUCE, n_chunks=3, model=model) == "3"
    assert [r.model for r in maps(session_llm)] == [map_model] * 3
    assert [r.model for r in reduces(session_llm)] == [reduce_model]


def test_spec_01_05_auto_maps_long_parts_on_the_balanced_tier(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(counting)
    content = "apple " * 12_000  # ~72K characters: one part is over the 8000-token fast threshold
    assert map_reduce(content, MAP, REDUCE, n_chunks=1) == "12000"
    assert [r.model for r in maps(session_llm)] == [TIER_MODELS["balanced"]]


def test_spec_01_06_content_over_one_million_characters(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(counting)
    content = "apple pear plum\n" * 150_000  # 2.4M characters
    assert len(content) > 2_000_000
    assert map_reduce(content, MAP, REDUCE) == "150000"
    # parts are capped so each fits a model's context: n_chunks=4 was raised
    assert len(maps(session_llm)) == -(-len(content) // MAX_CHUNK_CHARS)


def test_hierarchical_reduce_when_results_are_too_long_for_one_call(session_llm: LLMTestServer) -> None:
    # map answers echo their part (long); reduce answers count the parts it saw as "apple"s
    def handler(req: RecordedRequest) -> str:
        text = req.last_user
        if text.startswith("SUM"):
            return " ".join(["apple"] * len(re.findall(r"--- part \d+ ---", text)))
        return text

    session_llm.reply_with(handler)
    content = "x" * 50 + "\n" + ("word " * 19 + "\n") * 30_000  # 3M characters, 15 map answers of 200K
    out = map_reduce(content, "{chunk}", "SUM\n{results}", n_chunks=4)
    levels = reduces(session_llm)
    assert len(levels) > 1, "expected more than one reduce call"
    assert all(len(r.last_user) <= MAX_REDUCE_CHARS + 1000 for r in levels)
    assert out  # the final single reduce produced an answer


def test_chunk_placeholder_inserted_else_appended_and_literal_braces_kept(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(lambda r: "ok")
    map_reduce("BODY\n", 'Look at {chunk} and {"json": {}} {0} {results}', "Sum {x} {}:", n_chunks=1)
    (m,) = [r for r in session_llm.requests if r.model == TIER_MODELS["fast"]]
    assert m.last_user == 'Look at BODY\n and {"json": {}} {0} {results}'
    (r,) = [r for r in session_llm.requests if r.model == TIER_MODELS["powerful"]]
    assert r.last_user == "Sum {x} {}:\n\n--- part 1 ---\nok"
    assert fill("no placeholder", "{chunk}", "C") == "no placeholder\n\nC"
    assert fill("{chunk}{chunk}", "{chunk}", "C") == "CC"


def test_partial_map_failure_keeps_finished_map_results(session_llm: LLMTestServer) -> None:
    def handler(req: RecordedRequest) -> object:
        if "bad" in req.last_user:
            return Fault.http(400, body='{"error": {"message": "rejected"}}')
        return counting(req)

    session_llm.reply_with(handler)
    with pytest.raises(MapReduceError) as info:
        map_reduce("aaa apple\napple apple\nbad bad bad\nzzz apple\n", MAP, REDUCE, n_chunks=4)
    err = info.value
    assert err.stage == "map"
    assert err.map_results == ["1", "2", None, "1"]
    assert list(err.errors) == [2]
    assert "map_results" in str(err) and "1 of 4 map calls" in str(err)
    assert reduces(session_llm) == []


def test_reduce_failure_keeps_all_map_results(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(
        lambda r: (
            Fault.http(400, body='{"error": {"message": "no"}}') if r.last_user.startswith("SUM") else "7"
        )
    )
    with pytest.raises(MapReduceError) as info:
        map_reduce("a\nb\n", MAP, REDUCE, n_chunks=2)
    assert info.value.stage == "reduce" and info.value.map_results == ["7", "7"]


def test_spec_01_19_budget_limit_stops_map_reduce(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(counting)
    llm.get_session_budget().set_limits(max_calls=3)
    with pytest.raises(MapReduceError) as info:
        map_reduce("apple\n" * 60, MAP, REDUCE, n_chunks=6)
    err = info.value
    assert err.stage == "map"
    assert sum(r is not None for r in err.map_results) <= 3
    assert len(session_llm.requests) <= 3
    assert "budget" in str(err).lower() or any("max_calls" in e for e in err.errors.values())
    assert reduces(session_llm) == []


def test_spec_01_20_map_reduce_edge_cases(session_llm: LLMTestServer) -> None:
    session_llm.reply_with(counting)
    assert map_reduce("", MAP, REDUCE) == ""  # nothing to map: no calls
    assert session_llm.requests == []
    assert map_reduce("apple", MAP, REDUCE, n_chunks=50) == "1"  # more parts than characters: one part
    assert len(maps(session_llm)) == 1
    assert map_reduce("日本 apple ☃\n" * 10, MAP, REDUCE, n_chunks=3) == "10"
    for bad in (
        dict(n_chunks=0),
        dict(n_chunks=True),
        dict(n_chunks=2.5),
        dict(model=""),
        dict(model=None),
    ):
        with pytest.raises(AnalysisInputError):
            map_reduce("x", MAP, REDUCE, **bad)
    with pytest.raises(AnalysisInputError, match="content must be a str"):
        map_reduce(b"bytes", MAP, REDUCE)


WORDS = st.sampled_from(["apple", "pear", "plum", "apple", "fig"])
SEPARATORS = st.sampled_from([" ", "\n", "  ", "\t", " \n"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.tuples(WORDS, SEPARATORS), min_size=1, max_size=300),
    n_chunks=st.integers(min_value=1, max_value=40),
)
def test_spec_01_21_same_answer_for_any_chunking_when_map_and_reduce_are_order_insensitive(
    session_llm: LLMTestServer, words: list[tuple[str, str]], n_chunks: int
) -> None:
    session_llm.reply_with(counting)
    content = "".join(w + s for w, s in words)
    expected = sum(w == "apple" for w, _ in words)
    assert map_reduce(content, MAP, REDUCE, n_chunks=n_chunks) == str(expected)
    # the partition itself: contiguous, complete, never more than asked, no empty part
    spans = split_even(content, n_chunks)
    assert spans[0][0] == 0 and spans[-1][1] == len(content)
    assert all(a < b for a, b in spans) and all(
        b == c for (_, b), (c, _) in zip(spans, spans[1:], strict=False)
    )
    assert len(spans) <= n_chunks
