"""Provenance: outputs of cells that made model calls carry `metadata["rlm"]`; `%rlm provenance` lists
them by cell; a cache hit is reported as a cache hit under the same cache key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    cache = tmp_path_factory.mktemp("cache")

    def env(server: LLMTestServer) -> dict[str, str]:
        return {**llm_env(server), "RLM_CACHE": "readwrite", "RLM_CACHE_DIR": str(cache)}

    with kernel_with_llm_server(env) as served:
        yield served


def _metadata(ex, kind: str) -> list[dict]:  # noqa: ANN001 - an Execution
    return [
        m["content"].get("metadata", {}) for m in ex.messages if m.get("header", {}).get("msg_type") == kind
    ]


def test_results_and_displays_carry_rlm_metadata_and_the_summary_lists_cells(served) -> None:
    server, kernel = served
    server.reset()
    first = kernel.execute("llm_query('provenance please')", timeout=60)
    assert first.ok, first
    (meta,) = _metadata(first, "execute_result")
    rlm = meta["rlm"]
    assert rlm["calls"] == 1 and rlm["cache_hits"] == 0 and rlm["models"] == ["test-model"]
    assert rlm["input_tokens"] > 0 and len(rlm["cache_keys"]) == 1

    again = kernel.execute("llm_query('provenance please')", timeout=60)
    (meta2,) = _metadata(again, "execute_result")
    assert meta2["rlm"]["calls"] == 0 and meta2["rlm"]["cache_hits"] == 1
    assert meta2["rlm"]["cache_keys"] == rlm["cache_keys"]  # the replayed answer is the recorded one

    plain = kernel.execute("1 + 1", timeout=30)
    assert "rlm" not in _metadata(plain, "execute_result")[0]  # no model call, no stamp

    server.reply_with(Script(root=[repl("a = llm_query('look: ' + context)\nFINAL_VAR('a')")]))
    run = kernel.execute("%%rlm\nWhat is it?", timeout=120)
    assert run.ok, run
    stamped = [
        m["rlm"] for m in _metadata(run, "update_display_data") + _metadata(run, "display_data") if "rlm" in m
    ]
    assert stamped and max(s["calls"] for s in stamped) == 2  # the root call and the sub-call

    quiet = kernel.execute("x = llm_query('printed only')\nprint(len(x))", timeout=60)
    assert quiet.ok, quiet
    table = kernel.execute("%rlm provenance", timeout=30)
    assert table.ok, table
    text = table.result or "".join(d.get("text/plain", "") for d in table.display)
    assert "Model calls by cell" in text, text
    assert f"[{first.execution_count}]" in text and f"[{run.execution_count}]" in text
    assert f"[{quiet.execution_count}]" in text  # a cell with no output is numbered too
    assert "test-model ×2" in text


def test_view_magic_renders_a_saved_run_and_refuses_paths_outside_the_roots(served) -> None:
    server, kernel = served
    server.reset()
    server.reply_with(Script(root=[repl("a = llm_query('look: ' + context)\nFINAL_VAR('a')")]))
    assert kernel.execute("r = rlm_run('q', context='some text')\nr.to_jsonl('saved.jsonl')", timeout=120).ok
    shown = kernel.execute("%rlm view saved.jsonl", timeout=30)
    assert shown.ok, shown
    html = (shown.result_data or {}).get("text/html", "")
    assert "<details" in html and "look: some text" in html
    outside = kernel.execute("%rlm view /etc/passwd", timeout=30)
    assert not outside.ok and "outside the allowed roots" in str(outside)
    assert Path(kernel.cwd, "saved.jsonl").is_file()


def test_a_replayed_run_reports_cache_hits_not_calls(served) -> None:
    server, kernel = served
    server.reset()
    server.reply_with(Script(root=[repl("a = llm_query('replay: ' + context)\nFINAL_VAR('a')")] * 2))
    code = (
        "import json\nr = rlm_run('replay?', context='replayed text')\n"
        "print(json.dumps([r.answer, r.calls, r.usage.cache_hits, r.tree()['run']['cache_hits'], "
        "[c.usage.cache_hits for c in r.trajectory[0].calls]]))"
    )
    first = kernel.execute(code, timeout=120)
    assert first.ok, first
    answer, calls, hits, header_hits, _ = json.loads(first.stdout.strip().splitlines()[-1])
    assert calls == 2 and hits == 0 and header_hits == 0
    asked = len(server.requests)
    again = kernel.execute(code, timeout=120)
    assert again.ok, again
    answer2, calls2, hits2, header_hits2, child_hits = json.loads(again.stdout.strip().splitlines()[-1])
    assert answer2 == answer and len(server.requests) == asked  # nothing went to the server
    assert (calls2, hits2, header_hits2, child_hits) == (0, 2, 2, [1])
