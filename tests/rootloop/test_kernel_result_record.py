"""An `RLMResult` holds its record only: what `dataclasses.asdict`/`astuple`, `copy.deepcopy`, `vars` and
`dataclasses.replace` reach from a cell is plain data (the run's namespace is kept beside the result, not in a
field), through a real `rlm` kernel and the scripted test server."""

from __future__ import annotations

from tests.kernel_client import KernelHarness, ok, probe
from tests.rootloop.script import Script, repl
from tests.rootloop.test_kernel_rlm import script

FIELDS = [
    "answer",
    "answer_kind",
    "citations",
    "depth",
    "evidence",
    "message",
    "model",
    "model_bound",
    "question",
    "termination",
    "trajectory",
    "usage",
]


def test_the_walks_of_dataclasses_and_copy_reach_only_plain_data(served, kernel: KernelHarness) -> None:
    script(served, Script(root=[repl("n = len(context)\nv = 'x' * n"), "FINAL_VAR(v)"]))
    ok(kernel, "import copy, dataclasses, json\nr = rlm_run('q', context='abc')")
    # asdict deep-copies every field: before, the run's namespace (guards, builtins, helpers) was one of them
    assert probe(kernel, "sorted(k for k in dataclasses.asdict(r) if not k.startswith('_h'))") == FIELDS
    assert probe(kernel, "len(json.dumps(dataclasses.asdict(r))) > 0")  # plain data all the way down
    assert probe(kernel, "len(json.dumps(dataclasses.astuple(r))) > 0")
    ok(
        kernel,
        "seen = []\ndef f(pairs):\n    seen.append([k for k, v in pairs])\n    return dict(pairs)\n"
        "d = dataclasses.asdict(r, dict_factory=f)",
    )
    assert probe(kernel, "[k for s in seen for k in s if k.startswith('_n')]") == []
    # a deep copy is the record: it runs, and carries no namespace of its own
    assert probe(kernel, "[copy.deepcopy(r).answer, copy.deepcopy(r).namespace]") == ["xxx", {}]
    assert probe(kernel, "[copy.copy(r).answer, sorted(copy.copy(r).namespace)]") == ["xxx", []]
    # the result itself still shows the run's variables, and replace() cannot put a namespace in
    assert probe(kernel, "[r.namespace['v'], r.namespace['n']]") == ["xxx", 3]
    refused = kernel.execute("dataclasses.replace(r, answer='forged')", timeout=60)
    assert not refused.ok and "InitVar '_namespace' must be specified" in refused.all_text
    assert probe(kernel, "dataclasses.replace(r, answer='f', _namespace={'a': 1}).namespace") == {"a": 1}
    # and a follow-up still finds the run (the registry is keyed by the result, not its fields)
    script(served, Script(root=[repl("w = v + '!'"), "FINAL_VAR(w)"]))
    ok(kernel, "r2 = rlm_run('more', continue_from=r)")
    assert probe(kernel, "[r2.answer, r2.namespace['v']]") == ["xxx!", "xxx"]


def test_a_finished_runs_helpers_do_not_spend_beside_the_running_one(served, kernel: KernelHarness) -> None:
    script(served, Script(root=[repl("n = len(context)\nv = 'x' * n"), "FINAL_VAR(v)"]))
    ok(kernel, "r = rlm_run('q', context='abc', budget_usd=5)")
    served[0].reset()
    # from the notebook: the finished run's helpers are bound to its budget and trajectory
    for call in (
        "llm_query('hi')",
        "llm_query_batched(['hi'])",
        "rlm_query('hi')",
        "rlm_query_batched(['hi'])",
    ):
        refused = kernel.execute(
            f"r.namespace[{call.partition('(')[0]!r}]({call.partition('(')[2]}", timeout=60
        )
        assert not refused.ok and "finished run" in refused.all_text, (call, refused.all_text)
    assert not served[0].requests, "no model call may be made through a finished run's helpers"
    # a --shared run's model code reads the notebook's `r`: its helpers would spend beside the run's budget
    script(
        served,
        Script(
            root=[
                repl(
                    "n = len(context)\ntry:\n    out = r.namespace['llm_query']('spend ' + context)\n"
                    "except Exception as e:\n    out = str(e)"
                ),
                "FINAL_VAR(out)",
            ]
        ),
    )
    ok(kernel, "r2 = rlm_run('q', context='abc', shared=True, budget_usd=0.05)")
    assert "finished run" in probe(kernel, "r2.answer")
    # a follow-up runs in the finished run's namespace again: there its helpers work
    script(
        served, Script(root=[repl("n = len(context)\nw = llm_query('say hi: ' + context)"), "FINAL_VAR(w)"])
    )
    ok(kernel, "r3 = rlm_run('more', continue_from=r)")
    assert probe(kernel, "[r3.termination, r3.answer]") == ["final", "child answer to: say hi: abc"]
    refused = kernel.execute("r3.namespace['llm_query']('again')", timeout=60)
    assert not refused.ok and "finished run" in refused.all_text
