"""Parallel sub-RLMs in-process: every block runs on the calling (main) thread, one at a time, while the
sub-RLMs' root calls overlap; answers come back in input order."""

from __future__ import annotations

import threading

import pytest

import rlm_kernel.sandbox as sandbox
from rlm_kernel.repl import preload
from rlm_kernel.repl.context import LoadedContext
from rlm_kernel.repl.state import ReplState
from rlm_kernel.rootloop.driver import ROOT_LOOP
from rlm_kernel.sandbox import SandboxSession, new_namespace
from tests.llm_server import LLMTestServer
from tests.rootloop.script import ROOT_MARK, SUB_MARK, repl


def three_turns(rec) -> str:  # noqa: ANN001 - a RecordedRequest
    if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt:
        turn = rec.prompt.count("Output of turn") + 1
        return [
            repl("words = context.split()\nprint(len(words))"),
            repl("n = len(words)\nprint(n)"),
            repl("FINAL(n)"),
        ][min(turn, 3) - 1]
    return "child"


def test_blocks_run_on_the_calling_thread_one_at_a_time_while_root_calls_overlap(
    client_on_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    client_on_server.latency = 0.2
    client_on_server.reply_with(three_turns)
    threads: set[int] = set()
    running = [0, 0]  # now, most at once
    real = sandbox.run_source

    def watched(*args: object, **kwargs: object) -> object:
        threads.add(threading.get_ident())
        running[0] += 1
        running[1] = max(running)
        try:
            return real(*args, **kwargs)
        finally:
            running[0] -= 1

    monkeypatch.setattr(sandbox, "run_source", watched)
    session = SandboxSession()
    ns = new_namespace(session)
    preload.populate(
        ns, ReplState(session=session, root_loop=ROOT_LOOP), LoadedContext("", "text", "nothing loaded")
    )
    answers = ns["rlm_query_batched"](["a b", "a b c", "a b c d"])
    assert answers == ["2", "3", "4"]
    assert threads == {threading.get_ident()} and running[1] == 1  # 9 blocks, all here, never two at once
    subs = sorted((r for r in client_on_server.requests if SUB_MARK in r.prompt), key=lambda r: r.time)
    assert len(subs) == 9
    firsts = [r for r in subs if "Output of turn" not in r.prompt]
    seconds = [r for r in subs if "Output of turn 1" in r.prompt and "Output of turn 2" not in r.prompt]
    # the three first-turn calls were all sent before any sub-RLM's second turn: they overlapped
    assert max(r.time for r in firsts) < min(r.time for r in seconds)
    preload.forget(ns)
