"""The issue's "done when": 1000 prompts per wire format, in order, in budget, cached, replayable offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel.llm import Budget, BudgetExceeded
from tests.llm.conftest import MakeClient
from tests.llm_server import LLMTestServer, count_words

N = 1000


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_thousand_prompts_end_to_end(
    provider: str, make_client: MakeClient, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    llm_server.latency = 0.01
    cache_dir = str(tmp_path / "rec")
    prompts = [f"prompt {i} about item {i * 7}" for i in range(N)]
    client = make_client(provider, cache="readwrite", cache_dir=cache_dir, concurrency=64, prices={})
    budget = Budget(max_calls=N, max_output_tokens=N * 64)
    out = client.complete_batch(prompts, budget=budget, max_tokens=64)
    assert [c.text for c in out] == prompts
    snap = budget.snapshot()
    assert snap["calls"] == N == len(llm_server.requests)
    assert snap["input_tokens"] == sum(count_words(r.prompt) for r in llm_server.requests)
    assert snap["output_tokens"] == sum(c.output_tokens for c in out)
    with pytest.raises(BudgetExceeded):  # the budget is spent: the next call is refused, not sent
        client.complete("one more", budget=budget)

    again = client.complete_batch(prompts, budget=Budget(max_calls=1), max_tokens=64)  # all hits: free
    assert all(c.cached for c in again) and [c.text for c in again] == prompts
    assert len(llm_server.requests) == N

    llm_server.stop()  # strictly offline from here on
    replay = make_client(provider, cache="replay", cache_dir=cache_dir, concurrency=64)
    replayed = replay.complete_batch(prompts, max_tokens=64)
    assert [(c.text, c.input_tokens, c.output_tokens) for c in replayed] == [
        (c.text, c.input_tokens, c.output_tokens) for c in out
    ]
