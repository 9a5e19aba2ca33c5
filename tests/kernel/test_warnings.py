"""Warnings raised by rlm-kernel's own code reach the cell as one line, without our file paths or source."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kernel_client import KernelHarness
from tests.llm_server import LLMTestServer


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelHarness]:
    with LLMTestServer() as server:
        env = {"RLM_BASE_URL": server.openai_base_url, "RLM_MODEL": "unpriced-model", "RLM_CACHE": "off"}
        harness = KernelHarness(env=env, remove_env=("RLM_CONFIG", "OPENAI_API_KEY", "RLM_PROVIDER"))
        try:
            yield harness
        finally:
            harness.shutdown()


def test_unknown_price_warning_is_one_line_without_kernel_paths(kernel: KernelHarness) -> None:
    cell = 'r = map_reduce("a b c\\nd e f\\n" * 20, "count {chunk}", "sum {results}", n_chunks=2)'
    ex = kernel.execute(cell)
    assert ex.ok, ex
    assert "UnknownPriceWarning: no price known for model 'unpriced-model'" in ex.stderr
    assert "rlm_kernel" not in ex.stderr and "complete_batch(" not in ex.stderr


def test_warnings_from_cell_code_keep_their_usual_form(kernel: KernelHarness) -> None:
    ex = kernel.execute("flag = 'a' is 'a'")
    assert ex.ok, ex
    assert "SyntaxWarning" in ex.stderr
