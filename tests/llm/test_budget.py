"""Budgets over real HTTP: figures equal server usage, over-limit calls are never sent, nesting, threads."""

from __future__ import annotations

import threading

import pytest

from rlm_kernel.llm import BatchError, Budget, BudgetExceeded
from tests.llm.conftest import MakeClient
from tests.llm_server import LLMTestServer, count_words

PRICES = {"test-openai": (1.0, 2.0)}  # USD per 1M tokens


def test_figures_equal_server_usage(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    client = make_client(prices=PRICES)
    budget = Budget()
    prompts = [" ".join(["w"] * (i + 1)) for i in range(12)]
    out = client.complete_batch(prompts, system="be terse", budget=budget)
    snap = budget.snapshot()
    server_in = sum(count_words(r.prompt) for r in llm_server.requests)
    server_out = sum(count_words(r.last_user) for r in llm_server.requests)  # echo replies
    assert (snap["calls"], snap["input_tokens"], snap["output_tokens"]) == (12, server_in, server_out)
    assert snap["usd"] == pytest.approx((server_in * 1.0 + server_out * 2.0) / 1e6)
    assert sum(c.cost_usd or 0 for c in out) == pytest.approx(snap["usd"])
    assert snap["reserved"] == {"calls": 0, "input_tokens": 0, "output_tokens": 0, "usd": 0.0}


def test_call_over_limit_is_never_sent(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    budget = Budget(max_output_tokens=100)
    with pytest.raises(BudgetExceeded) as info:
        make_client().complete("hello", max_tokens=500, budget=budget)
    err = info.value
    assert err.limit == "max_output_tokens" and err.limit_value == 100 and err.requested == 500
    assert "max_output_tokens" in str(err) and "500" in str(err) and "not sent" in str(err)
    assert llm_server.requests == []
    assert budget.snapshot()["refused"] == 1


def test_usd_limit_uses_worst_case(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    client = make_client(prices={"test-openai": (1000.0, 1000.0)})
    budget = Budget(max_usd=0.5)
    # worst case: (≈6 prompt tokens + 400 max_tokens) × $1000/1M ≈ $0.41 → fits; a second call does not
    client.complete("a b c", max_tokens=400, budget=budget)
    assert budget.snapshot()["usd"] == pytest.approx((3 + 3) * 1000 / 1e6)
    with pytest.raises(BudgetExceeded, match="max_usd"):
        client.complete("a b c", max_tokens=500, budget=budget)
    assert len(llm_server.requests) == 1


def test_max_calls_in_a_batch_keeps_finished(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    budget = Budget(max_calls=3)
    with pytest.raises(BatchError) as info:
        make_client().complete_batch([f"p{i}" for i in range(5)], budget=budget, concurrency=1)
    err = info.value
    assert [r.text if r else None for r in err.results] == ["p0", "p1", "p2", None, None]
    assert sorted(err.errors) == [3, 4] and "max_calls" in err.errors[3]
    assert len(llm_server.requests) == 3


def test_child_budget_charges_parent(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    session = Budget(max_calls=10)
    run = session.child(max_calls=2)
    client = make_client()
    client.complete("x", budget=run)
    client.complete("y", budget=run)
    with pytest.raises(BudgetExceeded, match="max_calls"):
        client.complete("z", budget=run)
    client.complete("z", budget=session)
    assert run.snapshot()["calls"] == 2 and session.snapshot()["calls"] == 3
    assert run.depth == 1 and len(llm_server.requests) == 3


def test_parent_limit_stops_child(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    session = Budget(max_input_tokens=5)
    run = session.child()
    with pytest.raises(BudgetExceeded, match="max_input_tokens"):
        make_client().complete("one two three four five six seven eight nine ten", budget=run)
    assert llm_server.requests == []


def test_depth_limit() -> None:
    root = Budget(max_depth=2)
    grandchild = root.child().child()
    with pytest.raises(BudgetExceeded, match="max_depth"):
        grandchild.child()


def test_wall_time_limit(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    # No race against the clock: the first call is checked a few ms after the budget starts (the limit is
    # 1 s, so a busy machine has a wide margin), and the server's latency alone carries it past the limit,
    # so the second call is refused however fast or slow the machine is.
    client = make_client(prices=PRICES)  # built before the budget starts: its set-up is not timed
    llm_server.latency = 1.0
    budget = Budget(max_seconds=1.0)
    assert client.complete("slow", budget=budget).text == "slow"  # started in time: it runs to the end
    assert budget.elapsed >= 1.0
    with pytest.raises(BudgetExceeded, match="max_seconds"):
        client.complete("late", budget=budget)
    assert [r.last_user for r in llm_server.requests] == ["slow"]  # the late call was never sent


def test_cache_hits_are_free_but_counted(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    client = make_client(cache="readwrite", prices=PRICES)
    budget = Budget(max_calls=1)
    first = client.complete("same prompt", budget=budget)
    again = client.complete("same prompt", budget=budget)  # would exceed max_calls if it were not free
    assert again.cached and again.cost_usd == 0.0 and again.text == first.text
    snap = budget.snapshot()
    assert (snap["calls"], snap["cached"]) == (1, 1)
    assert len(llm_server.requests) == 1


def test_failed_call_releases_its_reservation(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    from tests.llm_server import Fault

    llm_server.queue(Fault.http(400))
    budget = Budget(max_calls=1)
    client = make_client()
    with pytest.raises(Exception, match="HTTP 400"):
        client.complete("x", budget=budget)
    client.complete("x", budget=budget)
    snap = budget.snapshot()
    assert (snap["calls"], snap["failed"]) == (1, 1)


def test_thread_safe_reservations() -> None:
    budget = Budget(max_calls=500)
    refused = []

    def work() -> None:
        for _ in range(100):
            try:
                r = budget.reserve(3, 2, None)
            except BudgetExceeded:
                refused.append(1)
                continue
            budget.settle(r, 3, 2, None)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = budget.snapshot()
    assert snap["calls"] == 500 and len(refused) == 300
    assert (snap["input_tokens"], snap["output_tokens"]) == (1500, 1000)


def test_session_budget_follows_rlm_set(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from rlm_kernel.llm import get_session_budget
    from rlm_kernel.llm.session_settings import set_setting

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    monkeypatch.setenv("RLM_BASE_URL", "http://127.0.0.1:9/v1")
    session = get_session_budget()  # this test's own session (tests/conftest.py): nothing spent yet
    assert session.snapshot()["calls"] == 0
    r = session.reserve(10, 10, None)
    session.settle(r, 10, 10, None)
    set_setting("budget_max_calls", "1")
    same = get_session_budget()
    assert same is session and same.limits["max_calls"] == 1 and same.snapshot()["calls"] == 1
    with pytest.raises(BudgetExceeded, match="max_calls"):
        same.reserve(1, 1, None)
    set_setting("budget_max_calls", "")
    assert get_session_budget().limits["max_calls"] is None


def test_missing_usage_is_estimated_not_free(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    from tests.llm_server import Reply

    llm_server.queue(Reply("a reply of forty characters, more or less", input_tokens=0, output_tokens=0))
    budget = Budget()
    out = make_client().complete("x" * 400, budget=budget)
    assert out.input_tokens >= 100 and out.output_tokens >= 10
    assert budget.snapshot()["input_tokens"] == out.input_tokens
