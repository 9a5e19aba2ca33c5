"""`errors_in_model_code`: a failed model call in model-written code raises (default) or returns "Error: …".

In-process root loop on the local test server, with scripted root replies and failing child calls.
"""

from __future__ import annotations

import pytest

from rlm_kernel.llm.config import load_config
from rlm_kernel.llm.errors import ConfigError
from rlm_kernel.llm.session_settings import set_setting
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop.driver import run_rlm
from tests.llm_server import Fault, LLMTestServer
from tests.rootloop.script import Script, repl

TEXT = " ".join(f"word{i}" for i in range(300))
BATCH = (
    "ps = ['item %d: ' % i + context[i * 40:(i + 1) * 40] for i in range(4)]\n"
    "try:\n    got = llm_query_batched(ps)\n"
    "except QueryBatchError as e:\n    got = e.results\n    why = e.errors\n"
    "print(got)"
)


def child(rec) -> object:  # noqa: ANN001 - a RecordedRequest
    """Item 2 of a batch fails with HTTP 500, a prompt saying "fail" with a malformed reply."""
    if "item 2:" in rec.last_user:
        return Fault.http(500)
    if "fail" in rec.last_user:
        return Fault.malformed()
    return f"answer to {rec.last_user[:6]}"


def run(server: LLMTestServer, mode: str | None, root: list, sub: object = None, **options: object):
    set_setting("errors_in_model_code", mode)  # as `%rlm set` does (None: unset); the next client reads it
    script = Script(root=root, child=child, **({"sub": sub} if sub is not None else {}))
    server.reply_with(script)
    result = run_rlm("q", ctxmod.load(TEXT, kind="text"), options=RunOptions(best_effort=False, **options))
    return result, script


@pytest.fixture
def server(client_on_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch) -> LLMTestServer:
    # recorded here so the teardown removes it again, whatever the test sets (os.environ, through `run`)
    monkeypatch.setenv("RLM_ERRORS_IN_MODEL_CODE", "raise")
    return client_on_server


def test_setting_default_values_and_bad_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLM_ERRORS_IN_MODEL_CODE", raising=False)
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    monkeypatch.setenv("RLM_PROVIDER", "local")
    assert load_config().errors_in_model_code == "raise"
    monkeypatch.setenv("RLM_ERRORS_IN_MODEL_CODE", " String ")
    assert load_config().errors_in_model_code == "string"
    assert load_config().as_display()["errors_in_model_code"] == "string"
    monkeypatch.setenv("RLM_ERRORS_IN_MODEL_CODE", "return")
    with pytest.raises(ConfigError) as err:
        load_config()
    assert "errors_in_model_code" in str(err.value) and "raise or string" in str(err.value)
    monkeypatch.delenv("RLM_ERRORS_IN_MODEL_CODE")
    with pytest.raises(ConfigError, match="raise or string"):
        set_setting("errors_in_model_code", "ignore")
    set_setting("errors_in_model_code", "string")  # in this test's own LLM session (tests/conftest.py)
    assert load_config().errors_in_model_code == "string"


@pytest.mark.parametrize("mode", [None, "raise"])
def test_raise_mode_failed_call_raises_in_model_code(server: LLMTestServer, mode: str | None) -> None:
    result, script = run(
        server,
        mode,
        [repl("a = llm_query('fail ' + context[:50])\nprint('after')"), "FINAL('x')"],
        max_iterations=2,
    )
    first = result.trajectory[0]
    assert "QueryError" in first.error and "llm_query failed" in first.error
    assert "after" not in first.stdout
    assert "QueryError" in script.root_prompts[1]  # the root reads the error
    assert "raises QueryBatchError" in script.root_prompts[0]  # the prompt says how failures surface


def test_string_mode_failed_call_returns_error_text(server: LLMTestServer) -> None:
    result, script = run(
        server,
        "string",
        [repl("a = llm_query('fail ' + context[:50])\nprint('after', a[:40])"), "FINAL('x')"],
        max_iterations=2,
    )
    first = result.trajectory[0]
    assert first.error is None
    assert result.namespace["a"].startswith("Error: llm_query failed: ")
    assert "after Error: llm_query failed" in first.stdout
    assert [c.ok for c in first.calls] == [False]  # still recorded as a failed call
    assert 'string starting with "Error:"' in script.root_prompts[0]
    assert "QueryBatchError" not in script.root_prompts[0]


def test_batch_failed_item_reported_alone_both_modes(server: LLMTestServer) -> None:
    result, _ = run(server, "raise", [repl(BATCH), "FINAL('x')"], max_iterations=2)
    got = result.namespace["got"]
    assert got[2] is None and [g[:14] for g in (got[0], got[1], got[3])] == [
        "answer to item",
        "answer to item",
        "answer to item",
    ]
    assert list(result.namespace["why"]) == [2]
    result, _ = run(server, "string", [repl(BATCH), "FINAL('x')"], max_iterations=2)
    got = result.namespace["got"]
    assert "why" not in result.namespace  # nothing raised
    assert got[2].startswith("Error: llm_query_batched item 2 failed: ") and "500" in got[2]
    assert [g for i, g in enumerate(got) if i != 2] == [
        "answer to item 0",
        "answer to item 1",
        "answer to item 3",
    ]
    (call,) = result.trajectory[0].calls
    assert call.items == 4 and call.failed == 1


def test_string_mode_sub_rlm_failure_returns_error_text(server: LLMTestServer) -> None:
    # the sub-RLM answers without code until it gives up (no_code); best_effort=False makes that a failure
    result, _ = run(
        server,
        "string",
        [repl("r = rlm_query('sub task ' + context[:60])\nprint(r[:30])"), "FINAL('x')"],
        sub=lambda rec: "no code here",
        max_iterations=2,
        max_no_code_turns=1,
    )
    assert result.trajectory[0].error is None
    assert result.namespace["r"].startswith("Error: rlm_query failed: the sub-RLM ended without an answer")


def test_string_mode_budget_refusal_still_ends_the_run(server: LLMTestServer) -> None:
    """A call refused for budget raises in both modes: the run ends at that turn either way."""
    set_setting("budget_max_calls", "1")  # the root's first call uses it up
    result, _ = run(
        server, "string", [repl("a = llm_query('x ' + context[:50])\nprint('after')"), "FINAL('x')"]
    )
    assert result.termination == "budget"
    assert "budget exceeded" in result.trajectory[0].error and "after" not in result.trajectory[0].stdout


def test_person_cell_raises_in_string_mode(server: LLMTestServer) -> None:
    """Outside model-written code the helpers raise whatever the setting says (the person's cells)."""
    from rlm_kernel.repl import preload
    from rlm_kernel.repl.state import ReplState
    from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source

    set_setting("errors_in_model_code", "string")
    server.reply_with(child)
    session = SandboxSession()
    ns = new_namespace(session)
    state = ReplState(session=session)
    preload.populate(ns, state, ctxmod.load(TEXT, kind="text"))
    outcome = run_source("a = llm_query('fail now')", ns, session, filename="<cell 1>")
    assert outcome.error is not None and "QueryError: llm_query failed" in outcome.error
    outcome = run_source(
        "try:\n    got = llm_query_batched(['item 1: a', 'item 2: b'])\n"
        "except QueryBatchError as e:\n    got = e.results",
        ns,
        session,
        filename="<cell 2>",
    )
    assert outcome.error is None and ns["got"] == ["answer to item 1", None]


def test_string_mode_sub_rlm_batch_failed_slot_holds_error_text(server: LLMTestServer) -> None:
    # sub-RLMs 1 and 3 answer; sub-RLM 2 never writes code (a rule: they run concurrently)
    result, _ = run(
        server,
        "string",
        [
            repl(
                "tasks = [t + ' ' + context[:60] for t in ('task one', 'task two', 'task three')]\n"
                "got = rlm_query_batched(tasks)"
            ),
            "FINAL('x')",
        ],
        sub=lambda rec: "no code" if "task two" in rec.prompt else repl("a = llm_query(context)\nFINAL(a)"),
        max_iterations=2,
        max_no_code_turns=1,
    )
    assert result.trajectory[0].error is None
    got = result.namespace["got"]
    assert got[0].startswith("answer to task o") and got[2].startswith("answer to task t")
    assert got[1].startswith("Error: rlm_query failed: the sub-RLM ended without an answer (no_code")
    assert [c.ok for c in result.trajectory[0].calls] == [True, False, True]
