"""Our OpenAI-compatible provider through a real LiteLLM proxy (owner: scale): calls, costs, budgets, rate
limits, fallbacks, per item in a batch, and through the kernel's broker.

The proxy (`litellm[proxy]==1.99.4`, in its own venv: it pins restrictedpython<9, which our kernel cannot
share) runs on a free 127.0.0.1 port with a config that routes model names to tests/llm_server.py: `gw-echo`
(priced per token, so the proxy reports costs), `gw-budget*` (a per-model `max_budget` it keeps in memory; a
virtual key's budget would need its database), `gw-rpm` (an `rpm` limit of 1, usage-based routing), and
`gw-flaky` (a dead upstream with `gw-echo` as its fallback). Run with `python -m pytest -m litellm`.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlm_kernel.llm import BatchError, Budget, BudgetExceeded, LLMClient, load_config
from rlm_kernel.llm.errors import ProviderBudgetExceeded, RateLimited
from tests.kernel_client import KernelHarness
from tests.litellm.proxy import GATEWAY_ENV, INSTALL, Proxy, free_port, gateway_config, proxy_command
from tests.llm_server import Fault, LLMTestServer

pytestmark = [pytest.mark.litellm, pytest.mark.timeout(600)]

MASTER_KEY = "sk-litellm-master-test"
UPSTREAM_KEY = "sk-upstream-test"
IN_PRICE, OUT_PRICE = 0.001, 0.002  # USD per token, as the proxy's config sets them
OPENAI_QUOTA = json.dumps(
    {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
)


def _config(upstream: str) -> dict[str, Any]:
    def model(name: str, **extra: Any) -> dict[str, Any]:
        params = {"model": "openai/test-model", "api_base": upstream, "api_key": UPSTREAM_KEY, **extra}
        return {"model_name": name, "litellm_params": params}

    priced = {"input_cost_per_token": IN_PRICE, "output_cost_per_token": OUT_PRICE}
    budget = {**priced, "max_budget": 0.01, "budget_duration": "1d"}
    return {
        "model_list": [
            model("gw-echo", **priced),
            model("gw-budget", **budget),
            model("gw-budget-kernel", **budget),
            model("gw-rpm", rpm=1),
            {
                "model_name": "gw-flaky",
                "litellm_params": {
                    "model": "openai/test-model",
                    "api_base": f"http://127.0.0.1:{free_port()}/v1",  # nothing listens there
                    "api_key": UPSTREAM_KEY,
                },
            },
        ],
        "router_settings": {
            "routing_strategy": "usage-based-routing-v2",  # enforces `rpm` (simple-shuffle only weighs by it)
            "fallbacks": [{"gw-flaky": ["gw-echo"]}],
        },
        "litellm_settings": {"num_retries": 0},  # retries are ours: one upstream request per attempt
        "general_settings": {"master_key": MASTER_KEY},
    }


@pytest.fixture(scope="module")
def upstream() -> Iterator[LLMTestServer]:
    with LLMTestServer(mode="echo") as srv:
        srv.when("UPSTREAM-QUOTA", Fault.http(429, {}, OPENAI_QUOTA))
        srv.when("UPSTREAM-429", Fault.rate_limited(retry_after="60"))
        yield srv


@pytest.fixture(scope="module")
def proxy(upstream: LLMTestServer) -> Iterator[Proxy]:
    command = proxy_command()
    if command is None:
        pytest.skip(f"no LiteLLM proxy: {INSTALL}")
    config = gateway_config(_config(upstream.openai_base_url))  # as a gateway team runs it (one worker:
    # the budgets and the rpm limit live in its memory, and a second worker would keep its own)
    proc = Proxy(command, config, Path(tempfile.mkdtemp(prefix="rlm-litellm-")), env=GATEWAY_ENV)
    print(f"LiteLLM proxy ready in {proc.start_seconds:.1f} s")
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def client(proxy: Proxy, tmp_path: Path) -> Iterator[Any]:
    made: list[LLMClient] = []

    def make(**settings: Any) -> LLMClient:
        settings.setdefault("model", "gw-echo")
        settings.setdefault("max_retries", 2)
        config = load_config(
            environ={},
            use_settings=False,
            provider="openai",
            base_url=f"{proxy.url}/v1",
            api_key=MASTER_KEY,
            cache="off",
            cache_dir=str(tmp_path / "cache"),
            **settings,
        )
        made.append(LLMClient(config))
        return made[-1]

    yield make
    for c in made:
        c.close()


def _asked(upstream: LLMTestServer, text: str) -> int:
    return sum(text in r.last_user for r in upstream.requests)


@pytest.mark.filterwarnings("ignore::UserWarning")  # gw-* have no price in our table: the proxy's counts
def test_calls_pass_unchanged_and_the_proxy_cost_is_charged(client: Any, upstream: LLMTestServer) -> None:
    budget = Budget()
    out = client().complete("one two three", budget=budget)
    assert out.text == "one two three" and out.input_tokens == 3 and out.output_tokens == 3
    assert out.cost_usd == pytest.approx(3 * IN_PRICE + 3 * OUT_PRICE)
    assert budget.snapshot()["usd"] == pytest.approx(out.cost_usd)
    seen = [r for r in upstream.requests if r.last_user == "one two three"][-1]
    assert seen.model == "test-model"  # routed by the proxy, with the upstream's key, not ours
    assert seen.headers.get("Authorization") == f"Bearer {UPSTREAM_KEY}"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_spent_model_budget_is_budget_exceeded(client: Any, upstream: LLMTestServer) -> None:
    c = client(model="gw-budget", max_retries=3)
    c.complete("spend it all")  # $0.009 of $0.01
    c.complete("spend the rest")  # still under before it is sent; $0.018 after
    started = time.monotonic()
    with pytest.raises(BudgetExceeded) as info:
        c.complete("one more")
    assert isinstance(info.value, ProviderBudgetExceeded) and info.value.status == 429
    assert "budget exceeded" in str(info.value) and "crossed budget" in str(info.value)
    assert _asked(upstream, "one more") == 0  # refused by the proxy itself, and not retried
    assert time.monotonic() - started < 5


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_rpm_limit_is_retried_then_rate_limited(client: Any, upstream: LLMTestServer) -> None:
    c = client(model="gw-rpm", max_retries=2, retry_after_cap=0.3)
    # the proxy counts requests per clock minute: a call may land in a fresh minute, so ask until refused
    err: RateLimited | None = None
    for n in range(4):
        started = time.monotonic()
        try:
            c.complete(f"request {n} this minute")
        except RateLimited as exc:
            err, elapsed, refused = exc, time.monotonic() - started, f"request {n} this minute"
            break
    assert err is not None, "the proxy never refused a request over its rpm limit of 1"
    assert not isinstance(err, BudgetExceeded) and err.retry_after == 60.0  # from llm_provider-retry-after
    assert "rate-limited" in str(err) and "after 3 attempts" in str(err)
    assert elapsed >= 2 * 0.3 - 0.05  # two waits of the capped 60 s the proxy asked for (shared cool-down)
    assert _asked(upstream, refused) == 0


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_fallback_is_invisible_to_us(client: Any, upstream: LLMTestServer) -> None:
    out = client(model="gw-flaky").complete("fall back please")
    assert out.text == "fall back please"  # answered by gw-echo's upstream, the only one listening
    assert _asked(upstream, "fall back please") == 1


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_each_item_of_a_batch_says_which(client: Any, upstream: LLMTestServer) -> None:
    c = client(max_retries=1, retry_after_cap=0.1)
    with pytest.raises(BatchError) as info:
        c.complete_batch(["fine a", "UPSTREAM-QUOTA b", "UPSTREAM-429 c", "fine d"])
    err = info.value
    assert [r.text if r else None for r in err.results] == ["fine a", None, None, "fine d"]
    assert "budget exceeded" in err.errors[1] and "exceeded your current quota" in err.errors[1]
    assert "rate-limited" in err.errors[2] and "budget" not in err.errors[2]
    assert _asked(upstream, "UPSTREAM-QUOTA b") == 1 and _asked(upstream, "UPSTREAM-429 c") == 2


def test_the_kernel_through_the_proxy(proxy: Proxy, upstream: LLMTestServer, tmp_path: Path) -> None:
    env = {
        "RLM_PROVIDER": "openai",
        "RLM_BASE_URL": f"{proxy.url}/v1",
        "RLM_API_KEY": MASTER_KEY,
        "RLM_MODEL": "gw-echo",
        "RLM_CACHE": "off",
        "RLM_MAX_RETRIES": "1",
        "RLM_RETRY_AFTER_CAP": "0.1",
        "PYTHONWARNINGS": "ignore",
    }
    kernel = KernelHarness(env=env, remove_env=("RLM_CONFIG", "OPENAI_API_KEY"))
    try:
        shown = kernel.execute("%rlm providers")
        assert shown.ok and f"{proxy.url}/v1" in shown.all_text, shown
        ok = kernel.execute('print(llm_query("through the broker"))')
        assert ok.ok and "through the broker" in ok.stdout, ok
        batch = kernel.execute(
            "try:\n"
            '    llm_query_batched(["fine x", "UPSTREAM-QUOTA y", "UPSTREAM-429 z"])\n'
            "except QueryBatchError as e:\n"
            "    print(repr(e.errors[1])); print(repr(e.errors[2]))\n"
        )
        assert batch.ok, batch
        lines = batch.stdout.splitlines()[-2:]  # after the fan-out's text progress line
        assert "budget exceeded" in lines[0] and "rate-limited" in lines[1], batch.stdout
        first = kernel.execute('llm_query("spend it all now", model="gw-budget-kernel")')  # $0.012 of $0.01
        assert first.ok, first
        spent = kernel.execute('llm_query("over", model="gw-budget-kernel")')
        assert not spent.ok and "budget exceeded" in spent.all_text and "crossed budget" in spent.all_text
        assert kernel.execute("1 + 1").ok  # the kernel goes on
    finally:
        kernel.shutdown()
