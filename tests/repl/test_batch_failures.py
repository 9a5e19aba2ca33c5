"""What a cell sees when some items of a batch fail: every finished result kept, each failed item reported on
its own, in input order, whichever helper made the batch (llm_query_batched, rlm_query_batched, map_reduce,
find_relevant with LLM scoring). All of them go through the one partial-failure type, `llm.BatchError`."""

from __future__ import annotations

import re
import time

import pytest

from rlm_kernel import llm
from rlm_kernel.analysis import FindRelevantError, MapReduceError
from rlm_kernel.repl import preload
from rlm_kernel.repl.errors import QueryBatchError, ReplError
from rlm_kernel.repl.state import ReplState, RunTracker
from rlm_kernel.rootloop.driver import ROOT_LOOP
from tests.llm_server import Fault, LLMTestServer
from tests.rootloop.script import Script, repl


def namespace(run: bool = False) -> tuple[dict, ReplState]:
    ns: dict = {}
    state = ReplState(run=RunTracker() if run else None, depth=1 if run else 0, root_loop=ROOT_LOOP)
    preload.populate(ns, state)
    return ns, state


def refuse_marked(rec: object) -> object:
    """`BAD<n>` prompts fail with a reason naming n (BAD1 after the others have failed: out of order);
    every other prompt is answered `ok <prompt>`."""
    marks = re.findall(r"BAD(\d)", rec.last_user)  # type: ignore[attr-defined]
    if not marks:
        return "ok " + rec.last_user  # type: ignore[attr-defined]
    if marks[0] == "1":
        time.sleep(0.3)  # the earlier item fails last: the report must still be in input order
    return Fault.http(400, body=f'{{"error": {{"message": "refused item BAD{marks[0]}"}}}}')


def test_llm_query_batched_keeps_answers_and_reports_each_failure_alone(
    client_on_server: LLMTestServer,
) -> None:
    client_on_server.reply_with(refuse_marked)
    ns, state = namespace(run=True)
    with pytest.raises(QueryBatchError) as info:
        ns["llm_query_batched"](["a", "BAD1", "c", "BAD3"])
    err = info.value
    assert isinstance(err, llm.BatchError) and isinstance(err, ReplError)  # one type, the name cells catch
    assert err.results == ["ok a", None, "ok c", None]
    assert list(err.errors) == [1, 3]
    assert "BAD1" in err.errors[1] and "BAD3" not in err.errors[1]
    assert "BAD3" in err.errors[3] and "BAD1" not in err.errors[3]
    assert str(err).startswith("2 of 4 prompts failed (item 1: ") and "e.results has the 2 answers" in str(
        err
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__
    (call,) = state.run.calls
    assert (call.kind, call.items, call.failed) == ("llm_query_batched", 4, 2)


def test_rlm_query_batched_keeps_answers_and_reports_each_failure_alone(
    client_on_server: LLMTestServer,
) -> None:
    # sub-RLM 1 never writes code and has no best-effort answer; the others answer with a model call
    def sub(rec: object) -> str:
        if "task BAD1" in rec.prompt:  # type: ignore[attr-defined]
            return " " if "The run has stopped" in rec.prompt else "no code"  # type: ignore[attr-defined]
        return repl("FINAL(llm_query('answer ' + context))")

    client_on_server.reply_with(Script(root=[], sub=sub))
    ns, _ = namespace()
    with pytest.raises(QueryBatchError) as info:
        ns["rlm_query_batched"](["task a", "task BAD1", "task c"])
    err = info.value
    assert err.results == ["child answer to: answer task a", None, "child answer to: answer task c"]
    assert list(err.errors) == [1] and "no_code" in err.errors[1]
    assert str(err).startswith("1 of 3 sub-RLMs failed (item 1: rlm_query failed: ")


def test_map_reduce_keeps_finished_map_answers_in_input_order(client_on_server: LLMTestServer) -> None:
    client_on_server.reply_with(refuse_marked)
    ns, _ = namespace()
    with pytest.raises(MapReduceError) as info:
        ns["map_reduce"](
            "part zero\nBAD1 part\npart two\nBAD3 part\n", "M {chunk}", "R {results}", n_chunks=4
        )
    err = info.value
    assert err.stage == "map"
    assert err.map_results == ["ok M part zero\n", None, "ok M part two\n", None]
    assert list(err.errors) == [1, 3]
    assert "BAD1" in err.errors[1] and "BAD3" not in err.errors[1] and "BAD3" in err.errors[3]
    assert "2 of 4 map calls did not finish" in str(err)


def test_find_relevant_llm_scoring_failure_keeps_the_keyword_ranking(client_on_server: LLMTestServer) -> None:
    content = "".join(
        f"block {i} needle{' BAD1' if i == 4 else ''}\n" + "padding text\n" * 44 for i in range(12)
    )
    client_on_server.reply_with(refuse_marked)
    ns, _ = namespace()
    with pytest.raises(FindRelevantError) as info:
        ns["find_relevant"](content, "needle", top_k=2, use_llm_scoring=True)
    err = info.value
    assert err.keyword_results == ns["find_relevant"](content, "needle", top_k=2)
    scoring = [r.last_user for r in client_on_server.requests if "needle" in r.last_user]
    failed = sum("BAD1" in p for p in scoring)  # the windows overlap: block 4 may be in more than one
    assert failed >= 1 and f"stopped after {len(scoring) - failed} of {len(scoring)} calls" in str(err)
    assert f"({failed} of {len(scoring)} calls failed" in str(err) and "BAD1" in str(err)
