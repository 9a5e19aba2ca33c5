"""The budget ledger in a real broker process: it decides, the kernel-side budgets mirror it, a restart keeps
what was spent. The calling side is this process (as in the kernel: a `BrokerLink` and an `LLMClient`)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlm_kernel.broker.supervisor import spawn_supervisor_process
from rlm_kernel.handover import key_ref, request_broker
from rlm_kernel.llm import BatchError, Budget, BudgetExceeded, LLMClient, LLMSession, load_config
from rlm_kernel.llm.broker_link import BrokerLink
from rlm_kernel.llm.broker_protocol import chain_to_wire
from tests.llm_server import LLMTestServer

PRICES = {"m": (1.0, 10.0)}  # USD per million input / output tokens
_FIGURES = ("calls", "input_tokens", "output_tokens", "usd", "refused", "cached")


@pytest.fixture
def brokered(
    llm_server: LLMTestServer, tmp_path: Path, llm_session: LLMSession
) -> Iterator[tuple[LLMClient, BrokerLink]]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))
    }
    env.update(RLM_BASE_URL=llm_server.openai_base_url, RLM_API_KEY="sk-ledger")
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    control = spawn_supervisor_process(env)
    sock, pid = request_broker(control)
    ours = llm_session.link = BrokerLink(control, sock, pid)  # this test's session, as the launcher makes it
    try:
        config = load_config(
            environ={},
            use_settings=False,
            provider="openai",
            base_url=llm_server.openai_base_url,
            api_key=key_ref("RLM_API_KEY"),
            model="m",
            cache="off",
            cache_dir=str(tmp_path / "cache"),
            concurrency=4,
            max_retries=0,
            prices=PRICES,
        )
        yield LLMClient(config), ours
    finally:
        llm_session.close()  # closes the link: the broker and its supervisor exit


def _ledger(budget: Budget, link: BrokerLink) -> dict[str, dict[str, Any]]:
    """The broker's snapshot of `budget`'s chain, by label (the `budget` frame)."""
    ids = {entry["id"]: entry["label"] for entry in chain_to_wire(budget)}
    snaps = link.request("budget", {"scopes": list(ids)})["budgets"]
    return {ids[sid]: snap for sid, snap in snaps.items()}


def _figures(snap: dict[str, Any]) -> dict[str, Any]:
    return {k: round(snap[k], 9) if isinstance(snap[k], float) else snap[k] for k in _FIGURES}


def test_the_broker_refuses_at_the_run_budget_and_the_mirror_shows_its_figures(
    brokered: tuple[LLMClient, BrokerLink], llm_server: LLMTestServer
) -> None:
    client, ours = brokered
    session = Budget(label="session")
    run = session.child(max_calls=3, label="run")
    with pytest.raises(BatchError) as caught:
        client.complete_batch([f"question {i}" for i in range(5)], budget=run, concurrency=1, max_tokens=16)
    err = caught.value
    assert sum(r is not None for r in err.results) == 3 and len(err.errors) == 2
    assert all("max_calls of budget 'run' would be exceeded" in e for e in err.errors.values()), err.errors
    assert len(llm_server.requests) == 3  # the refused items never left the broker
    with pytest.raises(BudgetExceeded) as single:
        client.complete("one more", budget=run)
    assert single.value.limit == "max_calls" and single.value.limit_value == 3
    ledger = _ledger(run, ours)
    for budget in (session, run):
        mirror = budget.snapshot()
        assert _figures(mirror) == _figures(ledger[budget.label]), (budget.label, mirror, ledger)
        assert mirror["reserved"]["calls"] == 0
    assert run.snapshot()["refused"] == 3 and session.snapshot()["refused"] == 0
    assert run.snapshot()["usd"] > 0 and run.snapshot()["input_tokens"] > 0


def test_a_restarted_broker_keeps_what_the_scope_has_spent(
    brokered: tuple[LLMClient, BrokerLink], llm_server: LLMTestServer
) -> None:
    client, ours = brokered
    run = Budget(max_calls=3, label="run")
    client.complete_batch(["a", "b"], budget=run, max_tokens=16)
    assert ours.pid is not None
    os.kill(ours.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while ours.generation == 0 and time.monotonic() < deadline:  # the link notices the socket closing
        time.sleep(0.05)
    assert ours.generation == 1
    # a new broker: its ledger starts from the kernel's settled figures, so only one more call fits
    with pytest.raises(BatchError) as caught:
        client.complete_batch(["c", "d"], budget=run, concurrency=1, max_tokens=16)
    assert ours.restarts == 1
    assert sum(r is not None for r in caught.value.results) == 1
    assert len(llm_server.requests) == 3
    assert _figures(_ledger(run, ours)["run"])["calls"] == 3 == run.snapshot()["calls"]
