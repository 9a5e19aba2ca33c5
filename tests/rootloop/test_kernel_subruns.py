"""Parallel sub-RLMs (`rlm_query_batched`) through a real kernel and the test server with 200 ms latency."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer, Reply
from tests.repl.conftest import llm_env
from tests.rootloop.script import ROOT_MARK, SUB_MARK, repl

LATENCY = 0.2


def three_turn_sub(rec) -> str:  # noqa: ANN001 - a RecordedRequest
    """Every sub-RLM takes three turns, whatever order the requests arrive in (a rule, not a queue)."""
    if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt:
        turn = rec.prompt.count("Output of turn") + 1
        if turn == 1:
            return repl("words = context.split()\nprint(len(words))")
        if turn == 2:
            return repl("n = len(words) * 10\nprint(n)")
        return repl("FINAL(n)")
    return "child"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(lambda server: {**llm_env(server), "RLM_CACHE": "off"}) as served:
        yield served


def _timed(kernel: KernelHarness, code: str) -> tuple[float, object]:
    started = time.monotonic()
    ex = kernel.execute(code, timeout=120)
    took = time.monotonic() - started
    assert ex.ok, ex
    return took, json.loads(ex.stdout.strip().splitlines()[-1])


def test_four_sub_rlms_overlap_their_model_calls(served) -> None:
    server, kernel = served
    server.reset()
    server.latency = LATENCY
    server.reply_with(three_turn_sub)
    kernel.execute("import json", timeout=30)
    one, got1 = _timed(kernel, "a = rlm_query_batched(['one two three'])\nprint(json.dumps(a))")
    four, got4 = _timed(
        kernel,
        "b = rlm_query_batched(['a b', 'a b c', 'a b c d', 'a b c d e'])\nprint(json.dumps(b))",
    )
    assert got1 == ["30"] and got4 == ["20", "30", "40", "50"]  # each its own namespace, in input order
    # sequential would be ~4x (12 root calls of 200 ms); overlapping is ~1x plus the code blocks
    assert four / one < 2.5, (one, four)
    subs = [r for r in server.requests if SUB_MARK in r.prompt]
    assert len(subs) == 3 + 12


def test_concurrency_one_runs_them_in_turn_and_bad_values_are_refused(served) -> None:
    server, kernel = served
    server.reset()
    server.latency = LATENCY
    server.reply_with(three_turn_sub)
    ex = kernel.execute("%rlm set subrun_concurrency=1", timeout=30)
    assert ex.ok, ex
    try:
        kernel.execute("import json", timeout=30)
        seq, got = _timed(kernel, "b = rlm_query_batched(['a b', 'a b c'])\nprint(json.dumps(b))")
        assert got == ["20", "30"]
        assert seq >= 6 * LATENCY
    finally:
        kernel.execute("%rlm set subrun_concurrency=4", timeout=30)
    bad = kernel.execute("%rlm set subrun_concurrency=0", timeout=30)
    assert not bad.ok and "subrun_concurrency" in str(bad) and "1-64" in str(bad)


def test_parallel_sub_rlms_are_children_of_the_root_trajectory(served) -> None:
    server, kernel = served
    server.reset()
    root = [repl("res = rlm_query_batched(['x y', 'x y z'])\nprint(res)"), repl("FINAL_VAR('res')")]

    def reply(rec) -> str:  # noqa: ANN001
        if ROOT_MARK in rec.prompt and SUB_MARK not in rec.prompt:
            return root[min(rec.prompt.count("Output of turn"), 1)]
        return three_turn_sub(rec)

    server.reply_with(reply)
    ex = kernel.execute("import json\nr = rlm_run('q', context='x y z')", timeout=120)
    assert ex.ok, ex
    ex = kernel.execute(
        "t = r.tree()\ncalls = t['turns'][0]['calls']\n"
        "print(json.dumps([r.termination, [c['kind'] for c in calls], "
        "[c['run']['run']['answer'] for c in calls], [len(c['run']['turns']) for c in calls], "
        "[c['prompt'] for c in calls], [c['model'] for c in calls], t['run']['model']]))",
        timeout=30,
    )
    assert ex.ok, ex
    term, kinds, answers, turns, prompts, models, root_model = json.loads(ex.stdout.strip().splitlines()[-1])
    assert term == "final" and kinds == ["rlm_query", "rlm_query"]
    assert answers == ["20", "30"] and turns == [3, 3] and prompts == ["x y", "x y z"]
    assert all(models) and root_model


def test_an_interrupt_while_sub_rlms_wait_for_their_root_calls_stops_them_all(served) -> None:
    server, kernel = served
    server.reset()
    server.reply_with(lambda rec: Reply("too late", delay=30.0))
    msg_id = kernel.kc.execute("answers = rlm_query_batched(['p one', 'p two', 'p three'])")
    deadline = time.monotonic() + 20
    while len(server.requests) < 3:  # the three sub-RLMs' first root calls, in flight together
        assert time.monotonic() < deadline, len(server.requests)
        time.sleep(0.05)
    interrupted_at = time.monotonic()
    kernel.interrupt()
    ex = kernel.collect(msg_id, timeout=30)
    assert ex.status == "error" and ex.error_name == "KeyboardInterrupt", ex
    assert time.monotonic() - interrupted_at < 15  # replies are 30 s away; typical well under 1 s
    assert len(server.requests) == 3
    server.reset()
    after = kernel.execute("1 + 1", timeout=30)
    assert after.ok and after.result == "2"
