"""In-process root-loop tests: real sandbox, real client on the local test server, scripted root replies."""

from __future__ import annotations

import json

import nbformat
import pytest

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop.driver import run_rlm, truncate
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

CORPUS = " ".join(f"word{i}" for i in range(2000))


def run(server: LLMTestServer, script: Script, **options: object):
    server.reply_with(script)
    return run_rlm("How many words?", ctxmod.load(CORPUS, kind="text"), options=RunOptions(**options))


def test_full_run_preview_chunk_map_recurse_final_var(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[
            repl("print(len(context)); print(context[:50])", "Preview first."),
            repl(
                "chunks = [context[i:i+5000] for i in range(0, len(context), 5000)]\n"
                "answers = llm_query_batched(['Count words: ' + c for c in chunks])\n"
                "print(len(chunks), len(answers))"
            ),
            repl("detail = rlm_query('Count the words in: ' + chunks[0][:100])\nprint(detail)"),
            repl("final = 'chunks=' + str(len(answers)) + '; detail=' + detail") + "\nFINAL_VAR(final)",
        ],
        sub=[repl("n = len(context.split())\nok = llm_query('Is it ' + str(n) + '?')\nFINAL(n)")],
    )
    result = run(client_on_server, script)
    assert result.termination == "final", result.message
    assert result.iterations == 4
    assert result.answer.startswith("chunks=")
    words = len(("Count the words in: " + CORPUS[:100]).split())
    assert result.answer == f"chunks=4; detail={words}"
    t1, t2, t3, _ = result.trajectory
    assert "word0 word1" in t1.stdout
    assert t2.calls[0].kind == "llm_query_batched" and t2.calls[0].items == 4 and t2.stdout == "4 4\n"
    assert [c.kind for c in t3.calls] == ["rlm_query"] and t3.calls[0].usage.calls == 2
    assert result.namespace["detail"] == str(words)
    assert result.calls == 4 + 4 + 2  # root turns + mapped chunks + the sub-RLM's root turn and llm_query
    # the root never saw the whole context
    assert all(CORPUS not in p for p in script.root_prompts)
    assert "word1999" not in script.root_prompts[0]


def test_final_rejected_before_a_child_call_both_forms(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[
            "I know it.\nFINAL(2000)",
            repl("FINAL('2000')"),
            repl("check = llm_query('is 2000 right?')\nFINAL('2000')"),  # no context in the call
            repl("check = llm_query('is 2000 right? ' + context[:100])\nFINAL('2000')"),
        ]
    )
    result = run(client_on_server, script)
    assert result.termination == "final" and result.answer == "2000" and result.iterations == 4
    assert all("rejected" in t.note for t in result.trajectory[:3])
    assert "did not include any of `context`" in result.trajectory[2].note
    # the rejection is fed back once (it used to be printed into the output and repeated in the notes)
    assert [t.feedback.count("rejected") for t in result.trajectory[:3]] == [1, 1, 1]
    assert all(t.feedback in p for t, p in zip(result.trajectory, script.root_prompts[1:], strict=False))
    assert "rejected" not in result.trajectory[1].stdout


def test_max_iterations(client_on_server: LLMTestServer) -> None:
    result = run(
        client_on_server,
        Script(root=[repl(f"x{i} = {i}") for i in range(5)]),
        max_iterations=3,
        best_effort=False,
    )
    assert result.termination == "max_iterations" and result.iterations == 3
    assert result.namespace["x2"] == 2 and result.answer is None


def test_no_code_turns(client_on_server: LLMTestServer) -> None:
    result = run(
        client_on_server,
        Script(root=["Hmm.", "Let me think.", "Still thinking."]),
        max_no_code_turns=2,
        best_effort=False,
    )
    assert result.termination == "no_code" and result.iterations == 2
    assert "no ```repl block" in result.trajectory[0].feedback


def test_exception_fed_back_and_run_continues(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[repl("x = 1/0"), repl("y = llm_query('hi ' + context[:60])\nprint('after', y)"), "FINAL_VAR(y)"]
    )
    result = run(client_on_server, script)
    assert result.termination == "final"
    assert "ZeroDivisionError" in result.trajectory[0].error
    assert "ZeroDivisionError" in script.root_prompts[1]
    assert result.answer == "child answer to: " + ("hi " + CORPUS[:60])[:60]


def test_sandbox_refusal_fed_back(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[repl("import os\nos.system('echo hi')"), repl("z = 1")],
    )
    result = run(client_on_server, script, max_iterations=2)
    assert "os" in result.trajectory[0].error and "SandboxError" in script.root_prompts[1]


def test_depth_cap_degrades_to_llm_query(client_on_server: LLMTestServer) -> None:
    script = Script(root=[repl("a = rlm_query('sub task ' + context[:60])"), "FINAL_VAR(a)"])
    result = run(client_on_server, script, max_depth=1)
    assert (
        result.termination == "final" and result.answer == "child answer to: " + ("sub task " + CORPUS)[:60]
    )
    assert [c.kind for c in result.trajectory[0].calls] == ["llm_query"]
    assert all("The task is in `context`" not in r.prompt for r in client_on_server.requests)


def test_feedback_truncated_and_history_bounded(client_on_server: LLMTestServer) -> None:
    script = Script(root=[repl("print(context)")] + [repl(f"v{i} = {i}") for i in range(4)])
    result = run(
        client_on_server, script, max_iterations=5, output_chars=300, history_turns=2, best_effort=False
    )
    assert "chars cut" in result.trajectory[0].feedback and len(result.trajectory[0].feedback) < 800
    last = script.root_prompts[-1]
    assert "earlier turn(s) are not shown" in last and "v0 = 0" not in last and "v3 = 3" not in last


def test_exports(client_on_server: LLMTestServer, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    ctxmod.set_allowed_roots([tmp_path])
    try:
        code = "q = llm_query('x ' + context[:60])\nprint(q)"
        result = run(client_on_server, Script(root=[repl(code), "FINAL_VAR(q)"]))
        result.to_jsonl("run.jsonl")
        lines = [json.loads(x) for x in (tmp_path / "run.jsonl").read_text().splitlines()]
        assert lines[0]["type"] == "run" and lines[0]["termination"] == "final" and len(lines) == 3
        assert lines[1]["code"] == code and lines[1]["calls"][0]["kind"] == "llm_query"
        assert lines[1]["calls"][0]["saw_context"] is True
        result.save("run.ipynb")
        nb = nbformat.read(tmp_path / "run.ipynb", as_version=4)
        cells = [c for c in nb.cells if c.cell_type == "code"]
        assert [c.source for c in cells] == [code]
        assert "child answer to: x" in cells[0].outputs[0]["text"]
        with pytest.raises(Exception, match="file exists; pass overwrite=True"):
            result.save("run.ipynb")
        result.save("run.ipynb", overwrite=True)
        with pytest.raises(Exception, match="must end in .ipynb"):
            result.save("run.txt")
        with pytest.raises(Exception, match="outside the allowed roots"):
            result.save("/tmp/elsewhere.ipynb")
    finally:
        ctxmod.set_allowed_roots(None)


def test_truncate_keeps_head_and_tail() -> None:
    text = "a" * 50 + "b" * 50
    cut = truncate(text, 20)
    assert cut.startswith("a" * 14) and cut.endswith("b" * 6) and "80 chars cut" in cut
    assert truncate("short", 20) == "short"


def test_no_file_writes_from_inside_a_run(client_on_server: LLMTestServer, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    ctxmod.set_allowed_roots([tmp_path])
    try:
        script = Script(
            root=[
                repl("inner = rlm_run('inner', context='x', max_iterations=1)\ninner.save('evil.ipynb')"),
                "inner run: no code",
            ]
        )
        result = run(client_on_server, script, max_iterations=1)
        # model code may not start a root loop with options of its own (rlm_query is its way down)
        assert "not available to model-written code" in result.trajectory[0].error
        assert not (tmp_path / "evil.ipynb").exists()
        assert "inner" not in result.namespace
        assert all(not k.startswith("_") for k in result.namespace)
    finally:
        ctxmod.set_allowed_roots(None)


def test_rlm_query_batched_keeps_successes(client_on_server: LLMTestServer) -> None:
    script = Script(
        root=[
            repl(
                "tasks = [t + ' ' + context[:60] for t in ('task one', 'task two', 'task three')]\n"
                "try:\n    got = rlm_query_batched(tasks)\n"
                "except QueryBatchError as e:\n    got = e.results\n    why = e.errors"
            ),
            "FINAL_VAR(got)",
        ],
        # sub-RLMs 1 and 3 answer, sub-RLM 2 never finishes (no code, three times); a rule, not a queue:
        # the sub-RLMs run concurrently, so their requests arrive in any order
        sub=lambda rec: "no code" if "task two" in rec.prompt else repl("a = llm_query(context)\nFINAL(a)"),
    )
    result = run(client_on_server, script, best_effort=False)  # sub-RLM 2 fails instead of a best effort
    assert result.termination == "final"
    got = result.namespace["got"]
    assert got[0].startswith("child answer to: task one word0") and got[1] is None
    assert got[2].startswith("child answer to: task three word0")
    assert "no_code" in result.namespace["why"][1]
    assert [c.ok for c in result.trajectory[0].calls] == [True, False, True]


def test_each_block_gets_its_own_output_allowance(client_on_server: LLMTestServer) -> None:
    from rlm_kernel.sandbox import Limits, SandboxSession, cell_limits

    script = Script(root=[repl("print('x' * 5000)"), repl("print('second turn output')")])
    client_on_server.reply_with(script)
    session = SandboxSession(Limits(output_bytes=1000))
    with cell_limits(session):  # as in the kernel: the run is inside the %%rlm cell's limits
        result = run_rlm(
            "q",
            ctxmod.load("abc", kind="text"),
            options=RunOptions(max_iterations=2, best_effort=False),
            session=session,
        )
        assert session.output_used == 0 and session.output_dropped == 0  # the cell's own accounting untouched
    first, second = result.trajectory
    assert first.stdout.startswith("x" * 1000) and "4,001 more bytes" in first.stdout
    assert second.stdout == "second turn output\n"


def test_compaction_fires_at_the_threshold_with_its_call_in_the_budget(
    client_on_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlm_kernel import llm

    monkeypatch.setenv("RLM_COMPACTION_TOKENS", "1500")
    llm.reset_client()
    before = llm.get_session_budget().snapshot()["calls"]
    script = Script(
        root=[
            repl("first = context[:10]\nprint('x' * 2400)"),  # ~600 tokens of output each turn
            repl("second = 2\nprint('y' * 2400)"),
            repl("third = 3\nprint('z' * 2400)"),
            repl("FINAL_VAR('first')"),
        ]
    )
    result = run(client_on_server, script)
    assert result.termination == "final", result.message
    kinds = [t.kind for t in result.trajectory]
    assert "compaction" in kinds and result.iterations == 4
    compaction = result.trajectory[kinds.index("compaction")]
    assert compaction.root_usage.calls == 1 and compaction.reply.startswith("child answer to:")
    assert "summarised" in compaction.note
    summary_requests = [r for r in client_on_server.requests if "You compress the working notes" in r.prompt]
    assert len(summary_requests) == kinds.count("compaction")
    assert "x" * 100 in summary_requests[0].prompt  # the older turns' output went into the summary call
    # the summary is shown to the root from then on, instead of the turns it replaced
    later = [r.prompt for r in client_on_server.requests if "Summary of the first" in r.prompt]
    assert later and "x" * 2400 not in later[-1]
    # counted like any call: in the run's usage and in the session budget
    assert result.usage.calls == 4 + kinds.count("compaction")
    assert llm.get_session_budget().snapshot()["calls"] - before == result.usage.calls


def test_no_compaction_below_the_threshold(client_on_server: LLMTestServer) -> None:
    result = run(client_on_server, Script(root=[repl("a = context[:5]\nprint(a)"), "FINAL_VAR(a)"]))
    assert result.termination == "final" and all(t.kind == "turn" for t in result.trajectory)
    assert not any("You compress the working notes" in r.prompt for r in client_on_server.requests)


def test_a_failed_child_call_still_names_its_model(client_on_server: LLMTestServer) -> None:
    from tests.llm_server import Fault

    script = Script(
        root=[
            repl("try:\n    llm_query('x ' + context[:40])\nexcept QueryError as e:\n    print('failed')"),
            repl("n = len(context)\nFINAL(n)"),
        ],
        child=lambda rec: Fault.http(500),
    )
    result = run(client_on_server, script)
    (call,) = result.trajectory[0].calls
    assert not call.ok and call.model == "test-model" and result.model == "test-model"
