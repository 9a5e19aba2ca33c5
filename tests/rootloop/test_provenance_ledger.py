"""The provenance ledger: calls and cache hits counted per cell, each distinct cache key listed once."""

from __future__ import annotations

from rlm_kernel.llm.events import CallEvent
from rlm_kernel.rootloop.provenance import Ledger


def _event(kind: str, key: str, owner: str = "cell-1") -> CallEvent:
    return CallEvent(kind, owner=owner, model="m", input_tokens=3, output_tokens=2, extra={"cache_key": key})


def test_the_same_call_twice_counts_twice_but_lists_its_key_once() -> None:
    ledger = Ledger()
    ledger.observe(_event("finish", "k1"))
    ledger.observe(_event("cached", "k1"))  # the identical call again, answered from the cache
    ledger.observe(_event("finish", "k2"))
    meta = ledger.for_cell("cell-1")
    assert meta is not None
    assert (meta["calls"], meta["cache_hits"]) == (2, 1)
    assert meta["cache_keys"] == ["k1", "k2"]
    assert meta["input_tokens"] == 9


def test_events_without_a_cell_or_a_model_are_not_calls() -> None:
    ledger = Ledger()
    ledger.observe(_event("finish", "k1", owner=""))
    ledger.observe(CallEvent("finish", owner="cell-2"))  # a sub-RLM fan-out item: no model
    assert ledger.for_cell("cell-2") is None and ledger.cells() == []
