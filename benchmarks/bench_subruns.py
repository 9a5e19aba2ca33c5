"""Parallel sub-RLMs: `rlm_query_batched` of four three-turn sub-RLMs vs one, at 200 ms per model call.

In-process: the real sandbox, helpers and client against the test server (its scripted replies make every
sub-RLM take three turns). Four sub-RLMs run one after another would take ~4× one; overlapping their model
calls (`subrun_concurrency` 4) brings that to ~1×. Baseline: one sub-RLM, same run.
"""

from __future__ import annotations

import os
import time
import warnings

from benchmarks.common import Figure, repeat_median
from rlm_kernel import llm
from rlm_kernel.llm.pricing import UnknownPriceWarning
from rlm_kernel.repl import preload
from rlm_kernel.repl.context import LoadedContext
from rlm_kernel.repl.state import ReplState
from rlm_kernel.rootloop.driver import ROOT_LOOP
from rlm_kernel.sandbox import SandboxSession, new_namespace
from tests.llm_server import LLMTestServer
from tests.rootloop.script import ROOT_MARK, SUB_MARK, repl

__all__ = ["run"]

LATENCY = 0.2
TURNS = 3


def _reply(rec) -> str:  # noqa: ANN001 - a RecordedRequest
    if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt:
        turn = rec.prompt.count("Output of turn") + 1
        if turn == 1:
            return repl("words = context.split()\nprint(len(words))")
        if turn == 2:
            return repl("n = len(words)\nprint(n)")
        return repl("FINAL(n)")
    return "child"


def _batched(n: int) -> float:
    session = SandboxSession()
    ns = new_namespace(session)
    state = ReplState(session=session, root_loop=ROOT_LOOP)
    preload.populate(ns, state, LoadedContext("", "text", "nothing loaded"))
    prompts = [" ".join(["w"] * (i + 2)) for i in range(n)]
    t0 = time.perf_counter()
    answers = ns["rlm_query_batched"](prompts)
    took = time.perf_counter() - t0
    if answers != [str(i + 2) for i in range(n)]:
        raise AssertionError(f"wrong answers: {answers}")
    preload.forget(ns)
    return took


def run(quick: bool) -> list[Figure]:
    reps = 3 if quick else 7
    server = LLMTestServer(latency=LATENCY).start()
    saved = dict(os.environ)
    os.environ.update(
        {
            "RLM_PROVIDER": "openai",
            "RLM_BASE_URL": server.openai_base_url,
            "RLM_API_KEY": "sk-bench",
            "RLM_MODEL": "bench",
            "RLM_CACHE": "off",
            "RLM_MAX_RETRIES": "0",
        }
    )
    os.environ.pop("RLM_CONFIG", None)
    server.reply_with(_reply)
    llm.reset_client()
    try:
        warnings.simplefilter("ignore", UnknownPriceWarning)  # the unpriced test model
        one = repeat_median(lambda: _batched(1), reps)
        four = repeat_median(lambda: _batched(4), reps)
    finally:
        llm.reset_client()
        os.environ.clear()
        os.environ.update(saved)
        server.stop()
    setup = f"{TURNS} turns per sub-RLM, L={LATENCY * 1000:.0f} ms/call, concurrency 4, median of {reps}"
    return [
        Figure(
            "rlm_query_batched: 4 sub-RLMs wall time",
            four,
            "s",
            baseline=one,
            baseline_name="1 sub-RLM, same run",
            target="≤1.5× one",
            met=four <= 1.5 * one,
            note=setup,
        )
    ]
