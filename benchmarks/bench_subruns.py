"""Parallel sub-RLMs: `rlm_query_batched` of three-turn sub-RLMs vs one, at 200 ms per model call.

In-process: the real sandbox, helpers and client, against the test server run in its own process (its
scripted replies make every sub-RLM take three turns), so the server's CPU and its share of the GIL are not
the client's — as with a real model server. Two kinds of sub-RLM:

- blocks without model calls (the first row): only the sub-RLMs' root calls can overlap;
- the first block calls `llm_query` over its context (issue 31), as a sub-RLM's code usually does: one such
  sub-RLM makes four calls in a row (three root calls and its block's), ~0.8 s at 200 ms. While a block
  waits for its call, the other sub-RLMs' blocks and root calls go on (`rlm_kernel.cooperative`), so four
  (`subrun_concurrency` 4, the default) — and sixteen with `subrun_concurrency=16` — take about as long as
  one. Before, each such block held the others: four took ~1.8x one, sixteen ~4.9x.

Baseline: one sub-RLM of the same kind, same run (median of the repetitions).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable

from benchmarks.common import Figure, repeat_median
from benchmarks.echo_server import start_server_process
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
FIRST_BLOCKS = {
    "plain": "words = context.split()\nprint(len(words))",
    "asks": "words = context.split()\nsaid = llm_query('In one word, what is this: ' + context)\nprint(said)",
}


def _reply(first: str) -> Callable[[object], str]:
    """The server's rule: three turns per sub-RLM, the first running `first`; other calls answer "child"."""

    def reply(rec) -> str:  # noqa: ANN001 - a RecordedRequest
        if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt:
            turn = rec.prompt.count("Output of turn") + 1
            if turn == 1:
                return repl(first)
            if turn == 2:
                return repl("n = len(words)\nprint(n)")
            return repl("FINAL(n)")
        return "child"

    return reply


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


def _serve(kind: str, latency: float) -> None:
    """`python -m benchmarks.bench_subruns --serve KIND`: the test server with the scripted sub-RLMs whose
    first block is `FIRST_BLOCKS[KIND]`; prints its base URL and serves until killed."""
    server = LLMTestServer(latency=latency).start()
    server.reply_with(_reply(FIRST_BLOCKS[kind]))
    print(server.base_url, flush=True)
    while True:
        time.sleep(3600)


def _timed(kind: str, sizes: list[int], reps: int, concurrency: int) -> list[float]:
    """Median wall time of a batch of each size, with the sub-RLMs' first block `FIRST_BLOCKS[kind]`."""
    proc, url = start_server_process(
        ["benchmarks.bench_subruns", "--serve", kind, "--latency", str(LATENCY)], "test server"
    )
    os.environ["RLM_BASE_URL"] = url + "/v1"
    os.environ["RLM_SUBRUN_CONCURRENCY"] = str(concurrency)
    session = llm.LLMSession()  # its client reads the environment
    try:
        with llm.use_session(session):
            return [repeat_median(lambda n=n: _batched(n), reps) for n in sizes]
    finally:
        session.close()
        proc.kill()
        proc.wait()


def run(quick: bool) -> list[Figure]:
    reps = 3 if quick else 7
    saved = dict(os.environ)
    os.environ.update(
        {
            "RLM_PROVIDER": "openai",
            "RLM_API_KEY": "sk-bench",
            "RLM_MODEL": "bench",
            "RLM_CACHE": "off",
            "RLM_MAX_RETRIES": "0",
        }
    )
    os.environ.pop("RLM_CONFIG", None)
    try:
        warnings.simplefilter("ignore", UnknownPriceWarning)  # the unpriced test model
        one, four = _timed("plain", [1, 4], reps, 4)
        one_asks, four_asks = _timed("asks", [1, 4], reps, 4)
        (sixteen_asks,) = _timed("asks", [16], reps, 16)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    setup = f"{TURNS} turns per sub-RLM, L={LATENCY * 1000:.0f} ms/call, median of {reps}"
    asking = "first block calls llm_query (4 model calls in a row per sub-RLM)"
    return [
        Figure(
            "rlm_query_batched: 4 sub-RLMs wall time",
            four,
            "s",
            baseline=one,
            baseline_name="1 sub-RLM, same run",
            target="≤1.5× one",
            met=four <= 1.5 * one,
            note=f"{setup}, concurrency 4; blocks make no model calls",
        ),
        Figure(
            "rlm_query_batched: 4 sub-RLMs whose blocks call models",
            four_asks,
            "s",
            baseline=one_asks,
            baseline_name="1 such sub-RLM, same run",
            target="≤1.3× one",
            met=four_asks <= 1.3 * one_asks,
            note=f"{setup}, concurrency 4; {asking}",
        ),
        Figure(
            "rlm_query_batched: 16 sub-RLMs whose blocks call models",
            sixteen_asks,
            "s",
            baseline=one_asks,
            baseline_name="1 such sub-RLM, same run",
            target="≤1.6× one",
            met=sixteen_asks <= 1.6 * one_asks,
            note=f"{setup}, subrun_concurrency=16; {asking}",
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_subruns")
    parser.add_argument("--serve", choices=sorted(FIRST_BLOCKS), required=True)
    parser.add_argument("--latency", type=float, default=LATENCY)
    args = parser.parse_args()
    _serve(args.serve, args.latency)
