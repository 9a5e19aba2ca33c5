"""The root loop through a real `rlm` kernel and the local LLM test server, with scripted root replies."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import nbformat

from tests.kernel_client import KernelHarness, ok, probe
from tests.llm_server import LLMTestServer, Reply
from tests.repl.conftest import llm_env
from tests.rootloop.script import ROOT_MARK, Script, repl


def script(served: tuple[LLMTestServer, KernelHarness], s: Script) -> Script:
    served[0].reply_with(s)
    return s


def test_rlm_magic_full_run_with_live_display_and_exports(served, kernel: KernelHarness) -> None:
    docs = Path(kernel.cwd) / "docs"
    docs.mkdir(exist_ok=True)
    for i in range(4):
        (docs / f"part{i}.txt").write_text(" ".join(f"w{i}_{j}" for j in range(300)))
    s = script(
        served,
        Script(
            root=[
                repl(
                    "print(len(context)); print(list(context_files)); print(context[:80])", "Preview first."
                ),
                repl(
                    "parts = [context[s:e] for s, e in context_files.values()]\n"
                    "summaries = llm_query_batched(['Summarise: ' + p[:200] for p in parts])\n"
                    "print(len(summaries))"
                ),
                repl("detail = rlm_query('Count the words: ' + parts[0][:60])\nprint(detail)"),
                repl("answer = ' | '.join(summaries[:1]) + ' / ' + detail") + "\nFINAL_VAR(answer)",
            ],
            sub=[repl("n = len(context.split())\nc = llm_query('check ' + str(n))\nFINAL(n)")],
        ),
    )
    ok(kernel, "import json\nload_context('docs')")
    ex = ok(kernel, "%%rlm --max-iterations 6 --max-depth 2\nHow many words are there?", timeout=120)
    html = [d["text/html"] for d in ex.display if "text/html" in d]
    assert html and "<details>" in html[-1] and "Turn 4" in html[-1] and "FINAL accepted" in html[-1]
    assert "ANSWER:" in ex.display[-1]["text/plain"]
    assert probe(kernel, "rlm_result.termination") == "final"
    assert probe(kernel, "rlm_result.iterations") == 4
    kinds = probe(kernel, "[[c.kind for c in t.calls] for t in rlm_result.trajectory]")
    assert kinds == [[], ["llm_query_batched"], ["rlm_query"], []]
    part0 = " ".join(f"w0_{j}" for j in range(300))
    assert probe(kernel, "rlm_result.namespace['detail']") == str(
        len(("Count the words: " + part0[:60]).split())
    )
    assert probe(kernel, "rlm_result.answer").startswith("child answer to: Summarise: w0_0")
    assert "=== docs/part0.txt ===" in s.root_prompts[0] and "w3_299" not in s.root_prompts[0]
    ok(kernel, "rlm_result.save('run.ipynb'); rlm_result.to_jsonl('run.jsonl')")
    nb = nbformat.read(Path(kernel.cwd) / "run.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert len([c for c in code if c.execution_count is not None]) == 4  # the root's turns
    assert [c.source for c in code if c.execution_count is None] == [  # and the sub-RLM's, nested
        "n = len(context.split())\nc = llm_query('check ' + str(n))\nFINAL(n)"
    ]
    lines = (Path(kernel.cwd) / "run.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["termination"] == "final" and len(lines) == 5


def test_final_rejected_before_child_call_both_forms(served, kernel: KernelHarness) -> None:
    s = script(
        served,
        Script(
            root=[
                "Easy.\nFINAL(42)",
                repl("FINAL(42)"),
                repl("v = llm_query('ok?')\nFINAL(42)"),  # a sub-call without the context does not count
                repl("v = llm_query('ok? ' + context)\nFINAL(42)"),  # what the sub-model said: 42
            ],
            child=lambda rec: "42",
        ),
    )
    ok(kernel, "import json\nr = rlm_run('What is it?', context='some text')")
    assert probe(kernel, "[r.termination, r.answer, r.iterations]") == ["final", "42", 4]
    notes = probe(kernel, "[t.note for t in r.trajectory]")
    assert all("rejected" in n for n in notes[:3]) and notes[3] == ""
    assert "did not include any of `context`" in notes[2]
    feedback = probe(kernel, "[t.feedback for t in r.trajectory]")
    assert [f.count("rejected") for f in feedback[:3]] == [1, 1, 1]  # fed back once per turn
    assert all(f in p for f, p in zip(feedback[:3], s.root_prompts[1:4], strict=True))


def test_limits_iterations_and_no_code(served, kernel: KernelHarness) -> None:
    script(served, Script(root=[repl(f"k{i} = {i}") for i in range(9)]))
    ok(kernel, "import json\nr = rlm_run('q', context='abc', max_iterations=3, best_effort=False)")
    assert probe(kernel, "[r.termination, r.iterations, r.namespace['k2']]") == ["max_iterations", 3, 2]
    script(served, Script(root=["thinking", "still thinking", "more"]))
    ok(kernel, "r = rlm_run('q', context='abc', max_no_code_turns=2, best_effort=False)")
    assert probe(kernel, "[r.termination, r.iterations]") == ["no_code", 2]


def test_exception_fed_back_run_continues(served, kernel: KernelHarness) -> None:
    s = script(
        served,
        Script(root=[repl("d = {}\nd['missing']"), repl("y = llm_query('hi ' + context)"), "FINAL_VAR(y)"]),
    )
    ok(kernel, "import json\nr = rlm_run('q', context='abc')")
    assert probe(kernel, "[r.termination, r.answer]") == ["final", "child answer to: hi abc"]
    assert "KeyError" in probe(kernel, "r.trajectory[0].error") and "KeyError" in s.root_prompts[1]


def test_depth_cap_degrades_to_llm_query(served, kernel: KernelHarness) -> None:
    script(served, Script(root=[repl("a = rlm_query('sub task ' + context)"), "FINAL_VAR(a)"]))
    ok(kernel, "import json\nr = rlm_run('q', context='abc', max_depth=1)")
    assert probe(kernel, "[r.termination, r.answer]") == ["final", "child answer to: sub task abc"]
    assert probe(kernel, "[c.kind for c in r.trajectory[0].calls]") == ["llm_query"]
    assert not any("The task is in `context`" in r.prompt for r in served[0].requests)


def test_budget_exhausted_mid_run_keeps_trajectory(served, kernel: KernelHarness) -> None:
    served[0].latency = 0.2
    script(
        served,
        Script(
            root=[
                repl("kept = 'from turn 1'\nprint(kept)"),
                repl("many = llm_query_batched(['item ' + str(i) for i in range(30)])"),
                repl("never = 1"),
            ]
        ),
    )
    # every call reserves 1024 output tokens at $10/M ≈ $0.01: the batch cannot fit in $0.05
    code = "import json\nr = rlm_run('q', context='abc', budget_usd=0.05, best_effort=False)"
    ok(kernel, code, timeout=120)
    got = probe(kernel, "[r.termination, r.iterations, r.namespace['kept'], 'never' in r.namespace]")
    assert got == ["budget", 2, "from turn 1", False]
    failed = probe(kernel, "r.trajectory[1].calls[0].failed")
    assert 0 < failed <= 30
    assert "budget" in probe(kernel, "r.message")


def test_interrupt_during_run(served, kernel: KernelHarness) -> None:
    server = served[0]
    script(
        served,
        Script(
            root=[repl("first = 1"), repl("slow = llm_query('slow please')"), repl("after = 1")],
            child=lambda rec: Reply("late", delay=30.0),
        ),
    )
    fired = threading.Event()

    def on_message(msg: dict) -> None:
        data = msg["content"].get("data", {})
        if not fired.is_set() and "Turn 1" in data.get("text/plain", ""):
            fired.set()
            threading.Timer(1.0, kernel.interrupt).start()

    ex = kernel.execute("%%rlm\nq", timeout=60, on_message=on_message)
    assert fired.is_set()
    assert ex.ok, ex
    ok(kernel, "import json")
    got = probe(
        kernel,
        "[rlm_result.termination, rlm_result.iterations, 'first' in rlm_result.namespace, "
        "'after' in rlm_result.namespace]",
    )
    assert got == ["interrupted", 2, True, False]
    assert any("slow please" in r.prompt for r in server.requests)
    assert ok(kernel, "1 + 1").result == "2"  # the kernel lives on


def test_shared_mode_uses_the_notebook_namespace(served, kernel: KernelHarness) -> None:
    script(
        served,
        Script(root=[repl("doubled = base * 2\nv = llm_query('ok ' + context)"), "FINAL_VAR(doubled)"]),
    )
    ok(kernel, "import json\nbase = 21\nload_context('shared context')")
    ok(kernel, "%%rlm --shared\nDouble it")
    assert probe(kernel, "[rlm_result.termination, rlm_result.answer, doubled]") == ["final", "42", 42]
    ex = ok(kernel, "FINAL('person again')")  # the notebook's FINAL is a person's FINAL again after the run
    assert any("person again" in d.get("text/html", "") for d in ex.display)


def test_time_limit_ends_the_run_and_keeps_turns(rlm_kernel_factory) -> None:
    server = LLMTestServer().start()
    try:
        server.reply_with(
            Script(root=[repl("started = True"), repl("while True:\n    started = not started")] * 5)
        )
        kernel = rlm_kernel_factory(env={**llm_env(server), "RLM_CPU_SECONDS": "2"})
        ex = kernel.execute("import json\nr = rlm_run('q', context='abc', best_effort=False)", timeout=60)
        assert ex.ok, ex
        assert probe(kernel, "[r.termination, r.iterations, 'started' in r.namespace]") == [
            "time_limit",
            2,
            True,
        ]
        assert "CellTimeout" in probe(kernel, "r.trajectory[1].error")
    finally:
        server.stop()


def test_map_reduce_in_a_run_is_charged_to_the_run_budget(served, kernel: KernelHarness) -> None:
    script(
        served,
        Script(
            root=[
                repl("parts = map_reduce(context, 'summarise this part', 'combine the parts', n_chunks=30)"),
                repl("after = 1"),
            ]
        ),
    )
    # each map call reserves 1024 output tokens at $10/M ≈ $0.01: 30 of them cannot fit in the run's $0.05
    code = "import json\nr = rlm_run('q', context='word ' * 30000, budget_usd=0.05)"
    ok(kernel, code, timeout=120)
    error = probe(kernel, "r.trajectory[0].error")
    assert "MapReduceError" in error and "of budget 'rlm run' would be exceeded" in error, error
    mapped = [r for r in served[0].requests if "summarise this part" in r.prompt]
    assert 0 < len(mapped) < 30, len(mapped)  # refused at the run's budget, not sent on the session's


def test_library_calls_in_a_run_are_charged_to_it_and_in_its_trajectory(
    served, kernel: KernelHarness
) -> None:
    """map_reduce and find_relevant(use_llm_scoring=True) reach the LLM layer without the helpers: the call
    scope (budget and run) carries them to the broker's ledger and into the run's trajectory."""
    script(
        served,
        Script(
            root=[
                repl(
                    "s = map_reduce(context, 'summarise this part', 'combine the parts', n_chunks=4)\n"
                    "hits = find_relevant(context, 'apples', top_k=2, use_llm_scoring=True)\n"
                    "print(len(hits))"
                ),
                "FINAL(done)",
            ],
            child=lambda rec: "7" if "apples" in rec.prompt and "summarise" not in rec.prompt else "ok",
        ),
    )
    text = "\n\n".join(f"Paragraph {i}: apples and pears, " + "filler " * 200 for i in range(40))
    ok(kernel, f"import json\nr = rlm_run('q', context={text!r}, budget_usd=1.0)", timeout=120)
    calls = probe(
        kernel,
        "[[c.kind, c.ok, c.usage.calls, c.usage.input_tokens, c.usage.cost_usd]"
        " for c in r.trajectory[0].calls]",
    )
    kinds = [c[0] for c in calls]
    assert "map_reduce" in kinds and "find_relevant" in kinds, calls
    for kind, good, n, tokens, usd in calls:
        assert good and n > 0 and tokens > 0 and usd > 0, (kind, calls)
    library_requests = [r for r in served[0].requests if ROOT_MARK not in r.prompt]
    scored = [r for r in library_requests if r.max_tokens == 8]  # find_relevant's scoring calls
    by_kind = dict((c[0], c[2]) for c in calls)
    assert by_kind["find_relevant"] == len(scored) > 0, (calls, len(scored))
    assert by_kind["map_reduce"] == len(library_requests) - len(scored) == 5, calls  # 4 maps + 1 reduce
    library = sum(c[2] for c in calls)
    # the run's usage (what its budget was charged) includes them: root turns + the library calls
    assert probe(kernel, "r.usage.calls") == probe(kernel, "len(r.trajectory)") + library


def test_rlm_magic_budget_refuses_map_reduce_with_the_map_calls_counted(
    served, kernel: KernelHarness
) -> None:
    served[0].latency = 0.05
    script(
        served,
        Script(
            root=[
                repl("parts = map_reduce(context, 'summarise this part', 'combine the parts', n_chunks=30)"),
                repl("after = 1"),
            ]
        ),
    )
    ok(kernel, "import json\nload_context('word ' * 30000)")
    # each map call reserves 1024 output tokens at $10/M ≈ $0.01: 30 of them cannot fit in the run's $0.05
    # (no best-effort turn: the test counts the run's calls; best_effort.py has its own budget tests)
    ok(kernel, "%%rlm --budget-usd 0.05 --no-best-effort\nSummarise", timeout=120)
    assert probe(kernel, "rlm_result.termination") == "budget"
    assert "would be exceeded" in probe(kernel, "rlm_result.message")
    assert not probe(kernel, "'after' in rlm_result.namespace")
    mapped = [r for r in served[0].requests if "summarise this part" in r.prompt]
    assert 0 < len(mapped) < 30, len(mapped)
    entry = probe(
        kernel,
        "[[c.kind, c.items, c.failed, c.usage.calls, c.usage.cost_usd]"
        " for c in rlm_result.trajectory[0].calls]",
    )
    assert len(entry) == 1 and entry[0][0] == "map_reduce", entry
    kind, items, failed, counted, usd = entry[0]
    assert items == 30 and counted == len(mapped) and failed == 30 - counted and usd > 0, entry
    # the run paid its root turn and every map call that was answered, and stayed within its budget
    assert probe(kernel, "rlm_result.usage.calls") == 1 + len(mapped)
    assert probe(kernel, "rlm_result.usage.cost_usd") <= 0.05
