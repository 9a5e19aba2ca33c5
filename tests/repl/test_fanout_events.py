"""`rlm_query_batched` as one fan-out: its sub-RLMs' calls and fan-outs nest under it (events → widgets)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rlm_kernel import llm
from rlm_kernel.llm.events import CallEvent, bus
from rlm_kernel.repl import preload
from rlm_kernel.repl.errors import QueryBatchError
from rlm_kernel.repl.state import ReplState
from rlm_kernel.rootloop.driver import ROOT_LOOP
from rlm_kernel.widgets.state import FanoutTracker
from rlm_kernel.widgets.text import fanout_summary
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

FAN_OUT = "parts = llm_query_batched(['x ' + context, 'y ' + context])\nFINAL(parts[0])"


@pytest.fixture
def events() -> Iterator[list[CallEvent]]:
    seen: list[CallEvent] = []
    unsubscribe = bus.subscribe(seen.append)
    yield seen
    unsubscribe()


def notebook() -> dict:
    ns: dict = {}
    preload.populate(ns, ReplState(root_loop=ROOT_LOOP))
    return ns


def test_sub_rlm_fan_outs_nest_under_one_parent(
    client_on_server: LLMTestServer, events: list[CallEvent]
) -> None:
    client_on_server.reply_with(Script(root=[], sub=[repl(FAN_OUT), repl(FAN_OUT)]))
    ns = notebook()
    assert ns["rlm_query_batched"](["task one", "task two"]) == [
        "child answer to: x task one",
        "child answer to: x task two",
    ]
    starts = [e for e in events if e.kind == "batch_start"]
    assert len(starts) == 3
    outer = starts[0]
    assert outer.parent_batch_id is None and outer.total == 2 and outer.extra["kind"] == "rlm"
    assert outer.extra["label"] == "2 sub-RLMs, first: task one"
    inner = starts[1:]
    assert [e.parent_batch_id for e in inner] == [outer.batch_id] * 2
    assert sorted(e.extra["label"] for e in inner) == [  # the sub-RLMs run concurrently: any order
        "2 prompts, first: x task one",
        "2 prompts, first: x task two",
    ]
    inner_ids = {e.batch_id for e in inner}
    # every call of a nested fan-out names the outer one as its parent …
    nested_calls = [e for e in events if e.batch_id in inner_ids and e.kind in ("start", "finish")]
    assert len(nested_calls) == 8 and {e.parent_batch_id for e in nested_calls} == {outer.batch_id}
    # … so do the sub-RLMs' own root calls (which belong to no fan-out of their own)
    root_calls = [e for e in events if e.batch_id is None and e.kind == "finish"]
    assert len(root_calls) == 2 and {e.parent_batch_id for e in root_calls} == {outer.batch_id}
    # the outer fan-out's items are the sub-RLMs, started together (subrun_concurrency 4), each finished
    items = [(e.kind, e.index) for e in events if e.batch_id == outer.batch_id]
    assert items[:3] == [("batch_start", None), ("start", 0), ("start", 1)]
    assert sorted(items[3:5]) == [("finish", 0), ("finish", 1)] and items[5:] == [("batch_end", None)]
    # folded by the widgets: one fan-out, two nested, and every token counted exactly once
    tracker = FanoutTracker()
    for e in events:
        tracker.handle(e)
    snap = tracker.snapshot(outer.batch_id)
    assert snap is not None and len(snap.children) == 2 and all(c.done == 2 for c in snap.children)
    spent = llm.get_session_budget().snapshot()
    assert spent["calls"] == 6
    assert (snap.input_tokens, snap.output_tokens) == (spent["input_tokens"], spent["output_tokens"])
    tokens = f"{spent['input_tokens']:,} in / {spent['output_tokens']:,} out tokens"
    assert fanout_summary(snap, timing=False) == (
        f"fan-out (2 sub-RLMs, first: task one): 2/2 done · 0 failed · 0 cached · 2 nested fan-outs · "
        f"{tokens} · $0.0000"
    )


def test_a_failed_sub_rlm_is_a_failed_item_and_its_spending_still_counts(
    client_on_server: LLMTestServer, events: list[CallEvent]
) -> None:
    # sub-RLM 0 never writes code (ends after 3 turns, and its best-effort turn is empty: no answer);
    # sub-RLM 1 fans out and answers (a rule, not a queue: the two run concurrently, so their requests
    # arrive in any order)
    def sub(rec: object) -> str:
        if "task one" not in rec.prompt:
            return repl(FAN_OUT)
        return " " if "The run has stopped" in rec.prompt else "no code"

    client_on_server.reply_with(Script(root=[], sub=sub))
    ns = notebook()
    with pytest.raises(QueryBatchError) as info:
        ns["rlm_query_batched"](["task one", "task two"])
    assert info.value.results == [None, "child answer to: x task two"]
    tracker = FanoutTracker()
    for e in events:
        tracker.handle(e)
    outer = next(e for e in events if e.kind == "batch_start")
    snap = tracker.snapshot(outer.batch_id)
    assert snap is not None and (snap.done, snap.failed, len(snap.children)) == (1, 1, 1)
    assert "no_code" in snap.errors[0]
    spent = llm.get_session_budget().snapshot()
    assert spent["calls"] == 3 + 1 + 1 + 2  # sub-RLM 0's turns and best-effort turn, sub-RLM 1, its fan-out
    assert (snap.input_tokens, snap.output_tokens) == (spent["input_tokens"], spent["output_tokens"])


def test_llm_query_batched_labels_its_fan_out(
    client_on_server: LLMTestServer, events: list[CallEvent]
) -> None:
    ns = notebook()
    assert len(ns["llm_query_batched"](["alpha beta", "gamma"])) == 2
    start = next(e for e in events if e.kind == "batch_start")
    assert start.extra["label"] == "2 prompts, first: alpha beta" and start.parent_batch_id is None
