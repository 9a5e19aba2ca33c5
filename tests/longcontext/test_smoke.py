"""A smoke run of every family through the benchmark's own runner, on the scripted test server (fast).

The same code as the real-model run (`benchmarks.longcontext.run.run`): cases, the four systems, the proxy,
then a replay of the recording with no server at all, which must give the same rows.
"""

from __future__ import annotations

import re

import pytest

from benchmarks.longcontext import report
from benchmarks.longcontext.run import run
from benchmarks.longcontext.suite import FAMILIES
from benchmarks.longcontext.systems import RLMS_VENV, Settings
from tests.llm_server import LLMTestServer, RecordedRequest

SELECT = (
    r"^(protocol/(find|email-where)|needle/32K-d10|aggregation/32K-count-0|pairs/32K-0|code/32K-where-0"
    r"|multihop/32K-2hop-0)$"
)
ROOT_REPLY = "Let me look.\n```repl\nprint(len(context), context[:80])\n```"


def _scripted(req: RecordedRequest) -> str:
    """A root writes a look-around block; any other call reads a needle's code off its prompt if it can."""
    if "```repl" in req.prompt:
        return ROOT_REPLY
    found = re.search(r"access code for the \w+ vault is (\S+)\.", req.prompt)
    return f"The access code is {found.group(1)}." if found else "I found 3."


def _one_needle(server: LLMTestServer, tmp_path, system: str, settings: Settings) -> dict:  # noqa: ANN001
    """The 32K needle at 10 % depth through one system."""
    return run(
        server.openai_base_url,
        families=["needle"],
        lengths=["32K"],
        per_length=1,
        systems=[system],
        settings=settings,
        store=tmp_path / "calls.jsonl",
        select=r"^needle/32K-d10$",
        log=lambda *_: None,
    )


def _rows(doc: dict) -> list[tuple]:
    return [(r["system"], r["case"], r["answer"], r["score"], r["calls"]) for r in doc["rows"]]


def test_every_family_runs_through_the_runner_and_replays(llm_server: LLMTestServer, tmp_path) -> None:
    llm_server.reply_with(_scripted)
    kwargs = dict(
        families=["protocol", *FAMILIES],
        lengths=["32K"],
        per_length=1,
        systems=["ours", "bare", "pipeline"],
        settings=Settings(max_iterations=2),
        store=tmp_path / "calls.jsonl",
        select=SELECT,
        log=lambda *_: None,
    )
    doc = run(llm_server.openai_base_url, out=tmp_path / "out.json", **kwargs)  # type: ignore[arg-type]
    rows = doc["rows"]
    assert {r["family"] for r in rows} == {"protocol", *FAMILIES}
    assert len(rows) == 7 * 3
    for r in rows:
        assert r["calls"] >= 1 and r["input_tokens"] > 0 and 0.0 <= r["score"] <= 1.0, r
        assert r["replayed"] == 0 and "error" not in r, r
    ours = {r["case"]: r for r in rows if r["system"] == "ours"}
    for r in ours.values():  # two code turns, then the best-effort turn
        assert (r["termination"], r["answer_kind"], r["accepted"]) == ("max_iterations", "best_effort", False)
    assert "print(len(context)" in ours["needle/32K-d10"]["turns"][0]["code"]
    bare = {r["case"]: r for r in rows if r["system"] == "bare"}
    assert bare["needle/32K-d10"]["score"] == 1.0  # the needle at 10 % is inside the window's head
    assert bare["protocol/find"]["kept_chars"] < bare["protocol/find"]["chars"]  # cut to the window
    pipe = {r["case"]: r for r in rows if r["system"] == "pipeline"}
    assert pipe["aggregation/32K-count-0"]["how"].startswith("map_reduce")
    assert pipe["needle/32K-d10"]["how"].startswith("find_relevant")
    table = report.table(rows)
    assert "| ours |" in table and "needle@32K" in table
    # the same run replayed from the recording, no server
    llm_server.stop()
    again = run("http://127.0.0.1:9/v1", mode="replay", **kwargs)  # type: ignore[arg-type]
    assert _rows(again) == _rows(doc)
    assert all(r["replayed"] == r["calls"] for r in again["rows"])


@pytest.mark.skipif(
    not (RLMS_VENV / "bin" / "python").exists(), reason="no benchmarks/.venv-rlms (rlms==0.1.3)"
)
def test_the_reference_library_runs_a_case(llm_server: LLMTestServer, tmp_path) -> None:
    llm_server.reply_with(_scripted)
    doc = _one_needle(llm_server, tmp_path, "rlms", Settings(max_iterations=2))
    (row,) = doc["rows"]
    # the scripted root never sets answer["ready"]: the library's default answer at its limit, not accepted
    assert row["calls"] == 3 and (row["termination"], row["accepted"]) == ("max_iterations", False), row
    assert all(r.body.get("temperature") == 0 for r in llm_server.requests)


CITING_ROOT = (
    "```repl\nimport re\nm = re.search(r'access code for the \\w+ vault is (\\S+)\\.', context)\n"
    "print(m.group(0))\nFINAL(m.group(1), cite=[m.group(0), 'a sentence the context does not hold'])\n```"
)


def test_cite_rows_count_citations_the_context_holds(llm_server: LLMTestServer, tmp_path) -> None:
    """`--cite`: our root is asked for citations; each row lists the kernel's verified citations checked
    again by the benchmark, and the report counts right answers with one and citations the context lacks."""
    llm_server.reply_with(lambda req: CITING_ROOT if "```repl" in req.prompt else "child")
    doc = _one_needle(llm_server, tmp_path, "ours", Settings(max_iterations=3, cite=True))
    (row,) = doc["rows"]
    assert row["score"] == 1.0 and row["accepted"], row
    assert "Cite your evidence" in llm_server.requests[0].prompt
    # the quote not in the context was refused by the kernel (fed back once), the real one kept
    assert [c["in_context"] for c in row["citations"]] == [True], row["citations"]
    assert "access code for the" in row["citations"][0]["quote"]
    figures = report.summary(doc["rows"])["ours"]
    assert (figures["right_under_cite"], figures["right_with_citation"], figures["false_citations"]) == (
        1,
        1,
        0,
    )
    assert "| ours | 1 | 1 | 100% | 0 |" in report.table(doc["rows"])


def test_the_benchmark_checks_citations_itself() -> None:
    """The benchmark does not take the kernel's word: a quote the context lacks, or a span that does not
    hold its quote, counts as not in the context."""
    from benchmarks.longcontext.cases import Case
    from benchmarks.longcontext.systems import _checked_again

    text = "alpha beta\n  gamma delta"
    case = Case("needle", "t", "q", text, "x", "token", score=lambda _: 0.0)
    got = _checked_again(
        [
            {"quote": "beta gamma", "span": [6, 18]},  # whitespace aside, at its span
            {"quote": "beta gamma", "span": [0, 5]},  # the span holds something else
            {"quote": "omega", "span": [0, 5]},
        ],
        case,
    )
    assert [c["in_context"] for c in got] == [True, False, False]
