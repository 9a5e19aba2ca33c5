"""The reference library's rows on the scripted test server: how an `rlms` run ends decides how it is scored.

The real library (`rlms==0.1.3` in benchmarks/.venv-rlms), its real worker and the benchmark's runner and
proxy; only the model is scripted. Skipped when that venv is absent (CI installs `.[test]` only; the runner
makes the venv on first use of `--systems rlms`).
"""

from __future__ import annotations

import json

import pytest

from benchmarks.longcontext.run import run
from benchmarks.longcontext.systems import RLMS_VENV, Settings
from tests.llm_server import Fault, LLMTestServer, RecordedRequest, Reply

pytestmark = pytest.mark.skipif(
    not (RLMS_VENV / "bin" / "python").exists(),
    reason="no benchmarks/.venv-rlms: `python -m venv benchmarks/.venv-rlms && "
    "benchmarks/.venv-rlms/bin/pip install rlms==0.1.3` (the runner makes it on first use)",
)

SETS_READY = (
    "```repl\nimport re\nm = re.search(r'access code for the \\w+ vault is (\\S+)\\.', context)\n"
    "print(m.group(0))\nanswer['content'] = m.group(1)\nanswer['ready'] = True\n```"
)
FINDS_ONLY = (
    "```repl\nimport re\nm = re.search(r'access code for the \\w+ vault is (\\S+)\\.', context)\n"
    "print(m.group(0))\n```"
)
LLAMACPP_400 = json.dumps(
    {"error": {"code": 400, "message": "Cannot have 2 or more assistant messages at the end of the list."}}
)


PROSE = "The output above shows the code."


def _script(*turns: str, default_answer: str = "1234-WRONG"):  # noqa: ANN202
    """The root writes `turns[k]` on its k-th turn (the last one repeated). The library's default-answer call
    is the request that ends with an assistant message: it gets `default_answer`, or llama.cpp's HTTP 400
    when two assistant messages end it (0.1.3 sends that when its last turn had no code block)."""

    def reply(req: RecordedRequest) -> str | Fault:
        roles = [m.get("role") for m in (req.body or {}).get("messages", [])]
        if roles[-1] == "assistant":
            return Fault.http(400, body=LLAMACPP_400) if roles[-2:] == ["assistant"] * 2 else default_answer
        return turns[min(roles.count("assistant"), len(turns) - 1)]

    return reply


def _needle(url: str, tmp_path, **kw) -> dict:  # noqa: ANN001, ANN003
    return run(
        url,
        families=["needle"],
        lengths=["32K"],
        per_length=1,
        systems=["rlms"],
        settings=Settings(max_iterations=2),
        store=tmp_path / "calls.jsonl",
        select=r"^needle/32K-d10$",
        log=lambda *_: None,
        **kw,
    )


def test_a_final_of_the_library_is_accepted_and_replays(llm_server: LLMTestServer, tmp_path) -> None:
    llm_server.reply_with(_script(SETS_READY))
    (row,) = _needle(llm_server.openai_base_url, tmp_path)["rows"]
    ending = (row["termination"], row["answer_kind"], row["accepted"], row["score"])
    assert ending == ("final", "final", True, 1.0), row
    assert (row["iterations"], row["calls"], row["errors"]) == (1, 1, 0), row
    assert "access code for the" in row["turns"][0]["stdout"] and row["turns"][0]["final"] == row["answer"]
    llm_server.stop()
    (again,) = _needle("http://127.0.0.1:9/v1", tmp_path, mode="replay")["rows"]
    assert (again["answer"], again["termination"], again["replayed"]) == (row["answer"], "final", 1)


def test_its_default_answer_at_its_limit_is_best_effort(llm_server: LLMTestServer, tmp_path) -> None:
    """The code found the code but never set `answer["ready"]`: the library's own default answer (here a
    wrong one) is scored, never accepted."""
    llm_server.reply_with(_script(FINDS_ONLY))
    (row,) = _needle(llm_server.openai_base_url, tmp_path)["rows"]
    ending = (row["termination"], row["answer_kind"], row["accepted"])
    assert ending == ("max_iterations", "best_effort", False), row
    assert (row["answer"], row["score"], row["iterations"], row["at_limit"]) == ("1234-WRONG", 0.0, 2, True)
    assert row["calls"] == 3 and "error" not in row, row  # two turns, then the default-answer call


def test_a_failure_it_raises_is_a_library_error_with_the_reason(llm_server: LLMTestServer, tmp_path) -> None:
    """At its limit, after a turn without code, 0.1.3 sends two assistant messages in a row; llama.cpp
    refuses them with HTTP 400. The row says so, with nothing accepted or scored, and the refused call is
    counted and recorded (a replay ends the same way)."""
    llm_server.reply_with(_script(FINDS_ONLY, PROSE))
    (row,) = _needle(llm_server.openai_base_url, tmp_path)["rows"]
    ending = (row["termination"], row["accepted"], row["answer"], row["score"])
    assert ending == ("library-error", False, "", 0.0), row
    assert "BadRequestError" in row["error"] and "2 or more assistant messages" in row["error"], row
    assert (row["at_limit"], row["calls"], row["errors"]) == (True, 3, 1), row
    assert len(row["turns"]) == 2 and "access code for the" in row["turns"][0]["stdout"], row["turns"]
    llm_server.stop()
    (again,) = _needle("http://127.0.0.1:9/v1", tmp_path, mode="replay")["rows"]
    assert (again["termination"], again["error"], again["replayed"]) == ("library-error", row["error"], 3)


def test_upstream_slots_bound_the_calls_forwarded_at_once(llm_server: LLMTestServer, tmp_path) -> None:
    """`llm_query_batched` of 0.1.3 sends its prompts at once; with `upstream_slots=1` the server has one
    call in flight at a time (each sub-call is held a while, so unbounded ones would overlap) and every
    answer still comes back in its place."""
    batched = (
        "```repl\nouts = llm_query_batched(['Say ' + str(i) for i in range(4)])\nprint(outs)\n"
        "answer['content'] = ','.join(outs)\nanswer['ready'] = True\n```"
    )
    seen: list[int] = []

    def reply(req: RecordedRequest) -> str | Reply:
        seen.append(llm_server.in_flight)
        return batched if "```repl" in req.prompt else Reply(f"<{req.last_user}>", delay=0.3)

    llm_server.reply_with(reply)
    (row,) = _needle(llm_server.openai_base_url, tmp_path, upstream_slots=1)["rows"]
    assert row["answer"] == "<Say 0>,<Say 1>,<Say 2>,<Say 3>" and row["calls"] == 5, row
    assert seen == [1] * 5
