"""A gateway's answers over real HTTP (owner: scale): spent budgets, rate limits and reported costs.

tests/llm_server.py answers with the bodies and headers LiteLLM's proxy 1.99.4 sent when measured (the real
proxy is exercised in tests/litellm, marker `litellm`): a spent budget becomes `ProviderBudgetExceeded` (a
`BudgetExceeded`, never retried), a rate limit is retried after `llm_provider-retry-after` and then becomes
`RateLimited`, and `x-litellm-response-cost` is what the call costs our budget.
"""

from __future__ import annotations

import json

import pytest

from rlm_kernel.llm import BatchError, Budget, BudgetExceeded, ProviderError
from rlm_kernel.llm.errors import ProviderBudgetExceeded, RateLimited
from rlm_kernel.llm.providers.gateway import budget_figures, classify_error, reported_cost
from tests.llm.conftest import MakeClient
from tests.llm_server import Fault, LLMTestServer, Reply

# a per-model `max_budget` that is spent (router), as LiteLLM 1.99.4 answers it: HTTP 429, no retry header
MODEL_BUDGET = json.dumps(
    {
        "error": {
            "message": "No deployments available - crossed budget: Exceeded budget for deployment "
            "model_name: gw-budget, litellm_params.model: openai/test-model, model_id: 8c34e8: 0.015 >= 1d\n",
            "type": "None",
            "param": "None",
            "code": "429",
        }
    }
)
# a virtual key's / user's budget (proxy auth): `type: budget_exceeded`, 400 in older releases, 429 in newer
KEY_BUDGET = json.dumps(
    {
        "error": {
            "message": "Budget has been exceeded! Current cost: 0.0213, Max budget: 0.02",
            "type": "budget_exceeded",
            "param": None,
            "code": "400",
        }
    }
)
# an `rpm` limit (usage-based routing): HTTP 429 with `llm_provider-retry-after`, no `Retry-After`
THROTTLED = json.dumps(
    {
        "error": {
            "message": "litellm.RateLimitError: No deployments available for selected model. Passed model="
            "gw-rpm. Received Model Group=gw-rpm\nAvailable Model Group Fallbacks=None",
            "type": "throttling_error",
            "param": None,
            "code": "429",
        }
    }
)
OPENAI_QUOTA = json.dumps(
    {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
)


def _throttled(wait: str = "1") -> Fault:
    return Fault.http(429, {"llm_provider-retry-after": wait}, THROTTLED)


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (429, MODEL_BUDGET, "budget"),
        (400, KEY_BUDGET, "budget"),
        (429, KEY_BUDGET, "budget"),
        (429, OPENAI_QUOTA, "budget"),
        (
            400,
            '{"error": {"message": "ExceededBudget: End User=u1 over budget. Spend=0.0009, Budget=0.0001"}}',
            "budget",
        ),
        (429, THROTTLED, "rate_limit"),
        (429, "slow down", "rate_limit"),
        (429, '{"error": {"message": "Rate limit reached"}}', "rate_limit"),
        (400, '{"error": {"message": "prompt is too long"}}', "other"),
        (500, KEY_BUDGET, "other"),  # a server failure is one, whatever its text
        (503, "", "other"),
    ],
)
def test_classify_error(status: int, body: str, kind: str) -> None:
    assert classify_error(status, body.encode()) == kind


def test_budget_figures_and_reported_cost() -> None:
    assert budget_figures("Budget has been exceeded! Current cost: 0.0213, Max budget: 0.02") == (
        0.0213,
        0.02,
    )
    assert budget_figures("End User=u1 over budget. Spend=0.0009, Budget=0.0001") == (0.0009, 0.0001)
    assert budget_figures("crossed budget: 0.015 >= 1d") is None
    assert reported_cost({"x-litellm-response-cost": "0.015"}) == 0.015
    for odd in ("nan", "inf", "-1", "free", ""):
        assert reported_cost({"x-litellm-response-cost": odd}) is None
    assert reported_cost({}) is None


@pytest.mark.parametrize(("status", "body"), [(429, MODEL_BUDGET), (400, KEY_BUDGET), (429, OPENAI_QUOTA)])
def test_a_spent_budget_is_budget_exceeded_and_not_retried(
    status: int, body: str, make_client: MakeClient, llm_server: LLMTestServer
) -> None:
    llm_server.queue(Fault.http(status, {"llm_provider-retry-after": "1"}, body))
    with pytest.raises(BudgetExceeded) as info:
        make_client(max_retries=3).complete("spend")
    err = info.value
    assert isinstance(err, ProviderBudgetExceeded) and isinstance(err, ProviderError)
    assert err.status == status and not err.retryable and err.limit == "provider_budget"
    text = str(err)
    assert "budget exceeded" in text and f"HTTP {status}" in text and "retrying does not help" in text
    assert json.loads(body)["error"]["message"].strip()[:40] in text  # the gateway's own words
    assert "rate limited" not in text and "attempts" not in text
    assert len(llm_server.requests) == 1
    if body == KEY_BUDGET:
        assert (err.used, err.limit_value) == (0.0213, 0.02)


def test_a_rate_limit_waits_for_llm_provider_retry_after(
    make_client: MakeClient, llm_server: LLMTestServer
) -> None:
    llm_server.queue(_throttled("1"))
    assert make_client().complete("after the wait").text == "after the wait"
    first, second = llm_server.requests
    assert second.time - first.time >= 0.99  # our own backoff would have waited at most 0.5 s


def test_a_lasting_rate_limit_is_rate_limited(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.queue(*[_throttled("60")] * 3)
    with pytest.raises(RateLimited) as info:
        make_client(max_retries=2, retry_after_cap=0.1).complete("busy")
    err = info.value
    assert not isinstance(err, BudgetExceeded)
    assert err.status == 429 and err.retry_after == 60.0
    text = str(err)
    assert "rate-limited" in text and "after 3 attempts" in text and "RLM_CONCURRENCY" in text
    assert "No deployments available for selected model" in text
    assert len(llm_server.requests) == 3


def test_each_item_of_a_batch_says_which(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.when("item spent", Fault.http(429, {}, MODEL_BUDGET))
    llm_server.when("item busy", _throttled("60"))
    client = make_client(max_retries=1, retry_after_cap=0.05)
    with pytest.raises(BatchError) as info:
        client.complete_batch(["fine 0", "item spent 1", "item busy 2", "fine 3"])
    err = info.value
    assert [r.text if r else None for r in err.results] == ["fine 0", None, None, "fine 3"]
    assert sorted(err.errors) == [1, 2]
    assert "budget exceeded" in err.errors[1] and "crossed budget" in err.errors[1]
    assert "rate-limited" in err.errors[2] and "budget" not in err.errors[2]
    spent = [r for r in llm_server.requests if "spent" in r.last_user]
    busy = [r for r in llm_server.requests if "busy" in r.last_user]
    assert len(spent) == 1 and len(busy) == 2  # the budget answer is final, the rate limit was retried


def test_the_reported_cost_is_what_the_budget_spends(
    make_client: MakeClient, llm_server: LLMTestServer
) -> None:
    llm_server.queue(Reply("costly answer", headers={"x-litellm-response-cost": "0.015"}))
    llm_server.queue(Reply("unreported answer"))
    # our own table prices the model at $1 per million tokens each way: far below the gateway's figure
    client = make_client(prices={"test-openai": (1.0, 1.0)})
    budget = Budget(max_usd=0.0151)
    first = client.complete("one two three", budget=budget)
    assert first.cost_usd == pytest.approx(0.015)
    second = client.complete("four five", max_tokens=4, budget=budget)
    assert second.cost_usd == pytest.approx((2 + 2) / 1e6)  # no header: our table
    assert budget.snapshot()["usd"] == pytest.approx(0.015 + 4e-6)
    with pytest.raises(BudgetExceeded, match="max_usd"):  # the gateway's figure left too little: not sent
        client.complete("six seven", max_tokens=200, budget=budget)
    assert len(llm_server.requests) == 2
