"""The analysis helpers from cells of a real `rlm` kernel, under the sandbox (SPEC-01.18, .19, .22)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.analysis.conftest import TIER_MODELS, tier_env
from tests.analysis.test_map_reduce import counting
from tests.kernel_client import KernelHarness, kernel_with_llm_server, probe
from tests.llm_server import LLMTestServer

SOURCE = """
def alpha(x):
    return x + 1


class Beta:
    async def gamma(self):
        return await alpha(2)
"""


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(tier_env) as (server, kernel):
        kernel.execute("import json", timeout=60)
        yield server, kernel


@pytest.fixture
def kernel(served: tuple[LLMTestServer, KernelHarness]) -> KernelHarness:
    served[0].reset()
    served[0].reply_with(counting)
    return served[1]


def test_spec_01_22_extract_functions_in_a_cell(kernel: KernelHarness) -> None:
    assert kernel.execute(f"src = {SOURCE!r}").ok
    got = probe(kernel, "extract_functions(src)")
    assert [(r["name"], r["start_line"], r["end_line"]) for r in got] == [
        ("alpha", 2, 3),
        ("gamma", 7, 8),
    ]
    assert probe(kernel, "[f['name'] for f in extract_functions('func F() {}', 'golang')]") == ["F"]


def test_spec_01_22_find_relevant_in_a_cell_on_loaded_context(kernel: KernelHarness) -> None:
    doc = "".join(f"line {i} filler words\n" for i in range(300))
    (Path(kernel.cwd) / "notes.txt").write_text(doc.replace("line 200 filler", "line 200 needle"))
    assert kernel.execute("load_context('notes.txt')", timeout=60).ok
    got = probe(kernel, "[[c.count('needle'), s > 0] for c, s in find_relevant(context, 'needle', top_k=3)]")
    assert got == [[1, True]]
    assert probe(kernel, "type(find_relevant(context, 'needle')[0]).__name__") == "tuple"
    assert probe(kernel, "find_relevant(context, 'needle')[0][0] in context") is True


def test_spec_01_22_map_reduce_in_a_cell_names_tier_models(
    served: tuple[LLMTestServer, KernelHarness], kernel: KernelHarness
) -> None:
    server = served[0]
    text = "apple pear\\n" * 40
    assert (
        probe(kernel, f"map_reduce('{text}', 'COUNT apples:\\n{{chunk}}', 'SUM:\\n{{results}}', n_chunks=4)")
        == "40"
    )
    models = [r.model for r in server.requests]
    assert models.count(TIER_MODELS["fast"]) == 4 and models[-1] == TIER_MODELS["powerful"]


def test_spec_01_18_helpers_run_sandboxed_and_return_plain_data(kernel: KernelHarness) -> None:
    # results are plain containers a cell can use; the sandbox still refuses private attributes
    assert probe(kernel, "type(extract_functions('def f(): pass')[0]).__name__") == "dict"
    ex = kernel.execute("extract_functions.__globals__")
    assert not ex.ok
    ex = kernel.execute("extract_functions('x', 'rust')")
    assert not ex.ok and "unsupported language 'rust'" in (ex.error_value or "")
    assert "Traceback" not in (ex.error_value or "")


def test_spec_01_19_budget_limits_stop_map_reduce_and_llm_scoring() -> None:
    server = LLMTestServer().start()
    server.reply_with(counting)
    kernel = KernelHarness(env={**tier_env(server), "RLM_BUDGET_MAX_CALLS": "3"})
    try:
        # the finished map answers stay reachable from the cell, as plain data
        kernel.execute("import json")
        ex = kernel.execute(
            "try:\n"
            "    map_reduce('apple\\n' * 50, 'COUNT:\\n{chunk}', 'SUM:\\n{results}', n_chunks=6)\n"
            "except Exception as e:\n"
            "    print(json.dumps([type(e).__name__, e.stage, e.map_results]))",
            timeout=60,
        )
        assert ex.ok, ex
        name, stage, results = json.loads(ex.stdout.strip().splitlines()[-1])
        assert (name, stage) == ("MapReduceError", "map")
        assert len(results) == 6 and sum(r is not None for r in results) == 3
        assert len(server.requests) == 3  # the budget stopped the other calls before they were sent
        # uncaught, the cell shows a message that says what happened and where the results are
        ex = kernel.execute(
            "map_reduce('apple\\n' * 50, 'COUNT:\\n{chunk}', 'SUM:\\n{results}', n_chunks=6)", timeout=60
        )
        assert not ex.ok
        assert "map_results" in ex.error_value and "budget" in ex.error_value.lower()
        assert len(server.requests) == 3
        before = len(server.requests)
        blocks = "".join(f"block {i} needle\n" + "pad\n" * 44 for i in range(12))
        ex = kernel.execute(f"find_relevant({blocks!r}, 'needle', top_k=2, use_llm_scoring=True)", timeout=60)
        assert not ex.ok and "keyword" in ex.error_value.lower()
        assert len(server.requests) - before <= 3
        # the keyword ranking still works without the model
        ex = kernel.execute(f"len(find_relevant({blocks!r}, 'needle', top_k=2))", timeout=60)
        assert ex.ok and ex.result == "2"
    finally:
        kernel.shutdown()
        server.stop()
