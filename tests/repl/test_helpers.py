"""In-process tests of the helpers against the local LLM test server (real client, no patching)."""

from __future__ import annotations

import pytest

from rlm_kernel.repl import preload
from rlm_kernel.repl.errors import QueryBatchError, QueryError, ReplError
from rlm_kernel.repl.state import ReplState, RunTracker
from rlm_kernel.rootloop.driver import ROOT_LOOP
from tests.llm_server import Fault, LLMTestServer


def fresh(run: bool = False) -> tuple[dict, ReplState]:
    ns: dict = {}
    state = ReplState(run=RunTracker() if run else None, depth=1 if run else 0, root_loop=ROOT_LOOP)
    preload.populate(ns, state)
    return ns, state


def test_preloaded_names_and_docstrings() -> None:
    ns, _ = fresh()
    for name in (
        "context",
        "ctx",
        "context_files",
        "load_context",
        "llm_query",
        "llm_query_batched",
        "rlm_query",
        "rlm_query_batched",
        "SHOW_VARS",
        "repl_set",
        "repl_get",
        "FINAL",
        "FINAL_VAR",
        "rlm_run",
        "QueryBatchError",
    ):
        assert name in ns, name
    assert "llm_query(prompt, model=None, max_tokens=None, system=None)" in ns["llm_query"].__doc__
    assert ns["context"] == "" and ns["ctx"] == ""


def test_helpers_expose_no_live_objects() -> None:
    ns, _ = fresh()
    for name in ("llm_query", "llm_query_batched", "rlm_query", "FINAL", "load_context"):
        public = [a for a in dir(ns[name]) if not a.startswith("_")]
        assert public == [], (name, public)


def test_llm_query_roundtrip(client_on_server: LLMTestServer) -> None:
    ns, state = fresh(run=True)
    client_on_server.reply_with(lambda rec: "answer to " + rec.last_user)
    assert ns["llm_query"]("what?") == "answer to what?"
    assert state.run.successes == 1
    call = state.run.calls[0]
    assert call.kind == "llm_query" and call.ok and call.usage.calls == 1 and call.usage.output_tokens == 3


def test_llm_query_failure_is_sanitised(client_on_server: LLMTestServer) -> None:
    ns, state = fresh(run=True)
    client_on_server.queue(Fault.http(400))
    with pytest.raises(QueryError, match="llm_query failed") as info:
        ns["llm_query"]("x")
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert "sk-test-key" not in str(info.value)
    assert state.run.successes == 0 and not state.run.calls[0].ok


def test_batched_keeps_successes(client_on_server: LLMTestServer) -> None:
    ns, state = fresh(run=True)
    client_on_server.reply_with(
        lambda rec: Fault.http(400) if "bad" in rec.last_user else "ok " + rec.last_user
    )
    assert ns["llm_query_batched"](["a", "b"]) == ["ok a", "ok b"]
    with pytest.raises(QueryBatchError) as info:
        ns["llm_query_batched"](["a", "bad", "c"])
    err = info.value
    assert err.results == ["ok a", None, "ok c"]
    assert list(err.errors) == [1] and isinstance(err.errors[1], str)
    assert "1 of 3 prompts failed" in str(err)
    assert state.run.successes == 2


def test_prompt_type_checked() -> None:
    ns, _ = fresh()
    with pytest.raises(QueryError, match="must be a str"):
        ns["llm_query"](123)
    with pytest.raises(QueryError, match="list of str"):
        ns["llm_query_batched"]("one string")


def test_rlm_query_at_max_depth_degrades(client_on_server: LLMTestServer) -> None:
    ns, state = fresh(run=True)
    state.depth = state.options.max_depth
    client_on_server.reply_with(lambda rec: "plain " + rec.last_user)
    assert ns["rlm_query"]("sub") == "plain sub"
    assert [c.kind for c in state.run.calls] == ["llm_query"]
    assert all("Recursive Language Model" not in r.prompt for r in client_on_server.requests)


def test_final_rejected_until_a_child_call_succeeds(client_on_server: LLMTestServer) -> None:
    ns, state = fresh(run=True)
    ns["FINAL"]("too early")
    assert not state.run.final_set and "rejected" in state.run.rejections[0]
    ns["answer"] = 42
    ns["FINAL_VAR"]("answer")
    assert not state.run.final_set and len(state.run.rejections) == 2
    ns["llm_query"]("check")
    ns["FINAL_VAR"]("answer")
    assert state.run.final_set and state.run.final == "42"


def test_final_in_a_notebook_stores(capsys: pytest.CaptureFixture[str]) -> None:
    ns, _ = fresh()
    ns["FINAL"]("Paris")
    assert ns["final_answer"] == "Paris"
    assert "FINAL ANSWER: Paris" in capsys.readouterr().out
    with pytest.raises(ReplError, match="no variable named 'nope'"):
        ns["FINAL_VAR"]("nope")
    with pytest.raises(ReplError, match="name as a string"):
        ns["FINAL_VAR"](3)


def test_repl_set_get_and_show_vars(capsys: pytest.CaptureFixture[str]) -> None:
    ns, _ = fresh()
    ns["repl_set"]("rows", [1, 2, 3])
    assert ns["repl_get"]("rows") == [1, 2, 3] and ns["repl_get"]("missing", "d") == "d"
    for bad in ("llm_query", "context", "_x", "1a", "class"):
        with pytest.raises(ReplError):
            ns["repl_set"](bad, 1)
    ns["SHOW_VARS"]()
    out = capsys.readouterr().out
    assert "rows" in out and "list" in out and "len 3" in out and "llm_query" not in out


def test_repair_restores_rebound_and_deleted_names() -> None:
    ns, _ = fresh()
    original = ns["llm_query"]
    ns["llm_query"] = lambda p: "fake"
    ns["context"] = "overwritten"
    del ns["FINAL"]
    assert preload.repair(ns) == ["FINAL", "context", "llm_query"]
    assert ns["llm_query"] is original and ns["context"] == ""
    assert preload.repair(ns) == []


def test_load_context_updates_repair_snapshot(tmp_path, monkeypatch) -> None:
    from rlm_kernel.repl import context as ctxmod

    monkeypatch.chdir(tmp_path)
    ctxmod.set_allowed_roots([tmp_path])
    try:
        (tmp_path / "a.txt").write_text("hello world")
        ns, _ = fresh()
        summary = ns["load_context"]("a.txt")
        assert summary.chars == 11 and ns["context"] == "hello world" and ns["ctx"] == "hello world"
        ns["context"] = "x"
        preload.repair(ns)
        assert ns["context"] == "hello world"
        assert dict(ns["context_files"]) == {"a.txt": (0, 11)}
    finally:
        ctxmod.set_allowed_roots(None)


def test_analysis_helpers_preloaded_and_counted_only_when_a_model_is_asked(client_on_server) -> None:
    ns, state = fresh(run=True)
    for name in ("map_reduce", "find_relevant", "extract_functions", "MapReduceError"):
        assert name in ns, name
    assert ns["extract_functions"]("def f(x):\n    return x\n")[0]["name"] == "f"
    assert state.run.successes == 0  # no model call: does not unlock FINAL
    client_on_server.reply_with(lambda rec: "part")
    assert ns["map_reduce"]("a\nb\nc\nd\n", "Summarise {chunk}", "Combine {results}", n_chunks=2) == "part"
    assert state.run.successes == 1 and state.run.calls[-1].kind == "map_reduce"


def test_rlm_query_without_a_root_loop_says_so() -> None:
    """The root loop is handed to the helpers (ReplState.root_loop): without one, a clear error."""
    ns: dict = {}
    preload.populate(ns, ReplState(run=RunTracker(), depth=1))
    with pytest.raises(QueryError, match="no root loop in this namespace"):
        ns["rlm_query"]("sub")
