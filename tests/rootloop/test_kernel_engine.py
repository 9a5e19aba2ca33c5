"""Issue 17 items 1, 3, 4, 5, 7 through a real `rlm` kernel and the scripted test server: best-effort answers,
tools, prompt control and both final-answer protocols, follow-up runs, typed answers."""

from __future__ import annotations

import json

from tests.kernel_client import KernelHarness, ok, probe
from tests.llm_server import LLMTestServer, Reply
from tests.repl.conftest import llm_env
from tests.rootloop.script import ROOT_MARK, SUB_MARK, Script, repl
from tests.rootloop.test_kernel_rlm import script

BEST_EFFORT_ASK = "No more code will run"


def systems(served) -> list[str]:  # noqa: ANN001
    """The system messages of the root requests the server received."""
    out = []
    for rec in served[0].requests:
        for m in rec.body.get("messages", []):
            if m.get("role") == "system" and ROOT_MARK in str(m.get("content")):
                out.append(str(m["content"]))
    return out


def err(kernel: KernelHarness, code: str) -> str:
    ex = kernel.execute(code, timeout=60)
    assert not ex.ok, ex
    return ex.all_text


# -- 1. best-effort answers ------------------------------------------------------------------------------
def test_turn_limit_gives_a_best_effort_answer(served, kernel: KernelHarness) -> None:
    s = script(served, Script(root=[repl("k = len(context)"), repl("k2 = k * 2"), "FINAL(about 6, from k2)"]))
    ok(kernel, "import json\nr = rlm_run('How long?', context='abc', max_iterations=2)")
    got = probe(kernel, "[r.termination, r.answer_kind, r.answer, r.iterations, r.trajectory[-1].note]")
    assert got[:4] == ["max_iterations", "best_effort", "about 6, from k2", 3]
    assert "best-effort" in got[4]
    assert BEST_EFFORT_ASK in s.root_prompts[-1] and "k2 = k * 2" in s.root_prompts[-1]
    assert "best-effort answer" in probe(kernel, "r.message")
    history = probe(kernel, "r.history[-2:]")
    assert [m["role"] for m in history] == ["user", "assistant"] and BEST_EFFORT_ASK in history[0]["content"]
    assert history[1]["content"] == "FINAL(about 6, from k2)"
    header = probe(kernel, "r.records()[0]")
    assert header["answer_kind"] == "best_effort" and header["answer"] == "about 6, from k2"


def test_no_best_effort_turns_it_off_and_final_is_marked_final(served, kernel: KernelHarness) -> None:
    s = script(served, Script(root=[repl("k = 1"), repl("k = 2"), "FINAL(never asked)"]))
    ok(kernel, "import json\ncontext_text = 'abc'")
    ok(kernel, "%%rlm --max-iterations 2 --no-best-effort\nHow long?")
    assert probe(kernel, "[rlm_result.answer, rlm_result.answer_kind, rlm_result.iterations]") == [
        None,
        None,
        2,
    ]
    assert not any(BEST_EFFORT_ASK in p for p in s.root_prompts)
    script(served, Script(root=[repl("n = len(context)\nFINAL(n)")]))
    ok(kernel, "r = rlm_run('How long?', context='abcd')")
    assert probe(kernel, "[r.answer, r.answer_kind]") == ["4", "final"]


def test_best_effort_skipped_with_the_reason_when_the_budget_cannot_pay(
    served, kernel: KernelHarness
) -> None:
    # the child's 4,000 output tokens at $10/M cost $0.04 of $0.045: no root call (reserving 1,024 output
    # tokens, about $0.01) fits afterwards, so the run ends on the budget and the best-effort turn is skipped
    s = script(
        served,
        Script(
            root=[repl("a = llm_query('big ' + context)"), repl("b = 1"), "FINAL(never)"],
            child=lambda rec: Reply("big answer", output_tokens=4000),
        ),
    )
    ok(kernel, "import json\nr = rlm_run('q', context='abc', budget_usd=0.045)", timeout=120)
    got = probe(kernel, "[r.termination, r.answer, r.answer_kind, r.iterations, r.message]")
    assert got[:4] == ["budget", None, None, 1], got
    assert "no best-effort answer: the budget cannot pay for one more root call" in got[4]
    assert len(s.root_prompts) == 1


def test_rlm_query_returns_a_best_effort_answer_marked_in_the_trajectory(
    served, kernel: KernelHarness
) -> None:
    script(
        served,
        Script(
            root=[
                repl("s = rlm_query('sub task: ' + context)\nprint(s)"),
                repl(
                    "try:\n    rlm_query('strict task: ' + context, best_effort=False)\n"
                    "except QueryError as e:\n    why = str(e)"
                ),
                "FINAL_VAR(s)",
            ],
            sub=["no code", "still no code", "FINAL(sub guess)", "nothing", "again nothing"],
        ),
    )
    ok(kernel, "import json\nr = rlm_run('q', context='abc', max_no_code_turns=2)", timeout=120)
    assert probe(kernel, "[r.termination, r.answer, r.answer_kind]") == ["final", "sub guess", "final"]
    calls = probe(kernel, "[[c.kind, c.ok, c.answer_kind] for t in r.trajectory for c in t.calls]")
    assert calls == [["rlm_query", True, "best_effort"], ["rlm_query", False, None]]
    assert "no_code" in probe(kernel, "r.namespace['why']")


# -- 3. tools --------------------------------------------------------------------------------------------
TOOL_CELL = (
    "import json\n"
    "table = {'alpha': 'first letter', 'omega': 'last letter'}\n"
    "def lookup(key: str, default='none') -> str:\n"
    "    '''Look `key` up in the glossary; `default` when it is missing.'''\n"
    "    return table.get(key, default)\n"
    "def peek(obj):\n"
    "    return getattr(obj, '__cl' + 'ass__')\n"
)


def test_a_tool_called_by_the_root_and_listed_in_the_prompt(served, kernel: KernelHarness) -> None:
    script(
        served,
        Script(
            root=[
                repl("n = len(context)\nv = lookup('alpha') + ' / ' + lookup('beta')\nprint(v)"),
                repl("try:\n    peek(v)\nexcept Exception as e:\n    refused = str(e)"),
                "FINAL_VAR(v)",
            ]
        ),
    )
    ok(kernel, TOOL_CELL)
    ok(kernel, "r = rlm_run('What is alpha?', context='abc', tools={'lookup': lookup, 'peek': peek})")
    assert probe(kernel, "[r.termination, r.answer]") == ["final", "first letter / none"]
    assert "underscore" in probe(kernel, "r.namespace['refused']")  # the tool runs sandboxed like a cell
    system = systems(served)[0]
    assert "lookup(key: str, default='none') -> str" in system
    assert "Look `key` up in the glossary" in system and "- `peek(obj)`" in system
    # the magic form, names looked up in the notebook
    script(served, Script(root=[repl("n = len(context)\nv = lookup('omega')"), "FINAL_VAR(v)"]))
    ok(kernel, "%%rlm --tools lookup\nWhat is omega?")
    assert probe(kernel, "rlm_result.answer") == "last letter"
    # a sub-RLM gets the tools too, listed in its own prompt
    script(
        served,
        Script(
            root=[repl("s = rlm_query('use the glossary: ' + context)"), "FINAL_VAR(s)"],
            sub=[repl("n = len(context)\nt = lookup('omega')\nFINAL(t)")],
        ),
    )
    ok(kernel, "r = rlm_run('q', context='abc', tools=[lookup])")
    assert probe(kernel, "[r.answer, r.trajectory[0].calls[0].answer_kind]") == ["last letter", "final"]
    subs = [r.prompt for r in served[0].requests if SUB_MARK in r.prompt]
    assert subs and all("- `lookup(key: str" in p for p in subs)


def test_reserved_and_unusable_tools_are_refused_clearly(served, kernel: KernelHarness) -> None:
    ok(kernel, TOOL_CELL)
    text = err(kernel, "rlm_run('q', context='abc', tools={'llm_query': lookup})")
    assert "'llm_query' is a name the REPL reserves" in text
    assert "reserves" in err(kernel, "rlm_run('q', context='abc', tools={'FINAL': lookup})")
    assert "must be a function defined" in err(kernel, "rlm_run('q', context='abc', tools={'p': print})")
    assert "must be a function defined" in err(kernel, "rlm_run('q', context='abc', tools=[llm_query])")
    assert "Python builtin" in err(kernel, "rlm_run('q', context='abc', tools={'len': lookup})")
    assert "no variable named 'nothere'" in err(kernel, "%%rlm --tools nothere\nq")
    ok(kernel, "search = 3")
    text = err(kernel, "rlm_run('q', shared=True, tools={'search': lookup})")
    assert "the notebook already has a variable 'search'" in text
    assert probe(kernel, "search") == 3
    assert not served[0].requests


# -- 4. prompt control and the two final-answer protocols ------------------------------------------------
def test_default_prompt_is_printable(served, kernel: KernelHarness) -> None:
    text = ok(kernel, "%rlm prompt").all_text
    assert ROOT_MARK in text and "The sub-model's window is" in text and 'FINAL_VAR("name")' in text


def test_replaced_and_extended_prompts_reach_the_server(served, kernel: KernelHarness) -> None:
    custom = ROOT_MARK + ". CUSTOM PROMPT: answer in one word."
    script(served, Script(root=[repl("n = len(context)\nFINAL(n)")] * 3))
    ok(kernel, f"import json\nr = rlm_run('q', context='abc', system_prompt={custom!r})")
    ok(kernel, f"mine = {custom!r}")
    ok(kernel, "%%rlm --system mine\nq")
    ok(kernel, "r = rlm_run('q', context='abc', system_prompt_extra='EXTRA RULE: be brief.')")
    ok(kernel, "rule = 'MAGIC RULE: cite lines.'")
    script(served, Script(root=[repl("n = len(context)\nFINAL(n)")]))
    ok(kernel, "%%rlm --system-extra rule\nq")
    first, second, third, fourth = systems(served)
    assert "Strategies" in fourth and fourth.rstrip().endswith("MAGIC RULE: cite lines.")
    assert first.startswith(custom) and "Strategies" not in first and first == second
    assert "Strategies" in third and third.rstrip().endswith("EXTRA RULE: be brief.")
    ok(kernel, "n = 3")
    assert "must hold the prompt as a str" in err(kernel, "%%rlm --system n\nq")


def test_the_reference_answer_dict_protocol(served, kernel: KernelHarness) -> None:
    s = script(
        served,
        Script(
            root=[
                repl("answer['content'] = 'seven'\nanswer['ready'] = True"),  # a literal: the gate refuses
                repl("n = len(context)\nanswer['content'] = n * 2\nanswer['ready'] = True"),
            ]
        ),
    )
    ok(kernel, "import json\nr = rlm_run('q', context='abcd')")
    assert probe(kernel, "[r.termination, r.answer, r.answer_kind, r.iterations]") == [
        "final",
        "8",
        "final",
        2,
    ]
    assert 'answer["ready"] = True rejected' in s.root_prompts[1]
    # a follow-up starts with the dict still ready: only a block that sets it again ends the run
    script(served, Script(root=[repl("m = n + 1"), repl("answer['content'] = m\nanswer['ready'] = True")]))
    ok(kernel, "r2 = rlm_run('and one more?', continue_from=r)")
    assert probe(kernel, "[r2.answer, r2.iterations]") == ["5", 2]
    # a shared run leaves the notebook's own `answer` alone unless the model uses it
    script(served, Script(root=[repl("m = len(context)\nFINAL(m)")]))
    ok(kernel, "answer = 'mine'\nload_context('xyz')\nr = rlm_run('q', shared=True)")
    assert probe(kernel, "[r.answer, answer]") == ["3", "mine"]


def test_malformed_final_forms_end_the_run(served, kernel: KernelHarness) -> None:
    ok(kernel, "import json")
    forms = {
        "```repl\nn = len(context)\nprint(n)\n```\nSo the answer is: FINAL(n)": "4",  # prose beside code
        "```repl\nn = len(context)\nprint(n)\n```\n```repl\nFINAL(The count is 4)\n```": "The count is 4",
        "```repl\nw = llm_query('word: ' + context)\n```\nFINAL(f(x) = 4 (two pairs))\n(I checked.)": (
            "f(x) = 4 (two pairs)"
        ),
        "```repl\nw = llm_query('word: ' + context)\n```\nFINAL(four\nletters)": "four\nletters",
    }
    for reply, expected in forms.items():
        # what the sub-model answered is evidence; a FINAL nothing produced is not (issue 27)
        script(served, Script(root=[reply], child=lambda rec, said=expected: said))
        ok(kernel, "r = rlm_run('How long?', context='abcd')")
        assert probe(kernel, "[r.termination, r.answer, r.iterations]") == ["final", expected, 1], reply


# -- 5. follow-up runs -----------------------------------------------------------------------------------
def test_continue_carries_history_namespace_and_budget(served, kernel: KernelHarness) -> None:
    s = script(
        served,
        Script(
            root=[
                repl("n = len(context)\nprint(n)"),
                "FINAL(n)",
                repl("doubled = n * 2\nFINAL(doubled)"),
                repl("FINAL(doubled + n + len(context))"),
            ]
        ),
    )
    ok(kernel, "import json\nload_context('abcde')")
    ok(kernel, "%%rlm --budget-usd 0.5\nHow long is it?")
    assert probe(kernel, "rlm_result.answer") == "5"
    ok(kernel, "%%rlm --continue\nAnd twice that?")
    assert probe(kernel, "[rlm_result.answer, rlm_result.namespace['n']]") == ["10", 5]
    follow_up = s.root_prompts[2]
    assert (
        "How long is it?" in follow_up
        and "print(n)" in follow_up
        and "Follow-up question: And twice" in follow_up
    )
    history = probe(kernel, "rlm_result.history")
    assert [m["role"] for m in history[:2]] == ["user", "assistant"] and "And twice that?" in history[-2][
        "content"
    ]
    # budget carried on: the follow-up spends from the first run's $0.50 budget
    ok(kernel, "first = rlm_result")
    ok(kernel, "r3 = rlm_run('And all together?', continue_from=first)")
    assert probe(kernel, "r3.answer") == "20"
    assert "rlm_run: continue_from must be the RLMResult" in err(kernel, "rlm_run('q', continue_from=3)")
    assert "keeps the earlier run's context" in err(kernel, "rlm_run('q', context='x', continue_from=first)")


def test_continue_without_an_earlier_run_is_refused(served, kernel: KernelHarness) -> None:
    ok(kernel, "rlm_result = None")
    assert "there is no earlier run" in err(kernel, "%%rlm --continue\nq")


# -- 7. typed answers ------------------------------------------------------------------------------------
def test_typed_answers_accepted_converted_and_rejected(served, kernel: KernelHarness) -> None:
    ok(kernel, "import json")
    cases = [
        ("int", [repl("n = len(context)\nFINAL(n)")], 4),
        ("int", [repl("n = len(context)\nprint(n)"), "FINAL(4)"], 4),  # converted from the prose text
        ("float", [repl("n = len(context)\nFINAL(n / 8)")], 0.5),
        ("bool", [repl("n = len(context)\nFINAL(str(n > 3).lower())")], True),
        ("str", [repl("n = len(context)\nFINAL(str(n))")], "4"),
        ("list[int]", [repl("import json\nxs = [len(context), 1]\nFINAL(json.dumps(xs))")], [4, 1]),
        ("dict[str, int]", [repl("d = {'n': len(context)}\nFINAL_VAR('d')")], {"n": 4}),
    ]
    for name, root, expected in cases:
        script(served, Script(root=root))
        ok(kernel, f"r = rlm_run('How long?', context='abcd', returns={name})")
        assert probe(kernel, "[r.termination, r.answer]") == ["final", expected], name
    s = script(
        served,
        Script(
            root=[
                repl("n = len(context)\nFINAL(str(n) + ' letters')"),
                repl("FINAL([n, 'x'])"),
                repl("FINAL([n, 2])"),
            ]
        ),
    )
    ok(kernel, "r = rlm_run('How long?', context='abcd', returns=list[int])")
    assert probe(kernel, "[r.answer, r.iterations]") == [[4, 2], 3]
    assert "the answer must be a list[int], but the text '4 letters' is not JSON" in s.root_prompts[1]
    assert "item 1: 'x' is not an int" in s.root_prompts[2]
    assert "The answer must be a list[int]" in systems(served)[-1]


def test_a_typed_answer_as_a_notebook_dataclass(served, kernel: KernelHarness) -> None:
    ok(
        kernel,
        "import json\nfrom dataclasses import dataclass\n"
        "@dataclass\nclass Stat:\n    name: str\n    count: int\n"
        "    def __post_init__(self):\n"
        "        if self.count < 0:\n            raise ValueError('count < 0')\n",
    )
    s = script(
        served,
        Script(
            root=[
                repl("n = len(context)\nFINAL({'name': 'len', 'cnt': n})"),
                repl("FINAL({'name': 'len', 'count': -n})"),
                repl('FINAL(\'{"name": "len", "count": \' + str(n) + "}")'),
            ]
        ),
    )
    ok(kernel, "load_context('abcd')")
    ok(kernel, "%%rlm --returns Stat\nHow long?")
    ok(kernel, "st = rlm_result.answer")
    assert probe(kernel, "[type(st) is Stat, st.name, st.count, rlm_result.iterations]") == [
        True,
        "len",
        4,
        3,
    ]
    assert "Stat has no field 'cnt'" in s.root_prompts[1]
    assert "ValueError: count < 0" in s.root_prompts[2]
    assert "Stat has the fields name: str, count: int" in systems(served)[0]
    assert "returns must be int, float" in err(kernel, "rlm_run('q', context='abc', returns=set)")
    assert (
        json.loads(probe(kernel, "json.dumps(rlm_result.records()[0]['answer'])"))
        == "Stat(name='len', count=4)"
    )


def test_a_follow_up_spends_from_the_first_runs_budget(served, kernel: KernelHarness) -> None:
    # each child answer costs $0.01 (1,000 output tokens at $10/M): the first run spends $0.02 of its $0.025,
    # so the follow-up's first root call (reserving about $0.01) no longer fits; a fresh run's would
    script(
        served,
        Script(
            root=[repl("a = llm_query('one ' + context)\nb = llm_query('two ' + context)\nFINAL(b)")],
            child=lambda rec: Reply("paid answer", output_tokens=1000),
        ),
    )
    ok(kernel, "import json\nr1 = rlm_run('q', context='abc', budget_usd=0.025)")
    assert probe(kernel, "r1.answer") == "paid answer"
    ok(kernel, "r2 = rlm_run('and then?', continue_from=r1, best_effort=False)")
    assert probe(kernel, "[r2.termination, r2.iterations]") == ["budget", 0]
    assert "the budget was exhausted before turn 1" in probe(kernel, "r2.message")


def test_the_cell_time_limit_still_gets_a_best_effort_answer(rlm_kernel_factory) -> None:  # noqa: ANN001
    server = LLMTestServer().start()
    try:
        server.reply_with(
            Script(
                root=[
                    repl("started = True"),
                    repl("while True:\n    started = not started"),
                    "FINAL(my guess)",
                ]
            )
        )
        kernel = rlm_kernel_factory(env={**llm_env(server), "RLM_CPU_SECONDS": "2"})
        ok(kernel, "import json\nr = rlm_run('q', context='abc')")
        got = probe(kernel, "[r.termination, r.answer, r.answer_kind, r.iterations]")
        assert got == ["time_limit", "my guess", "best_effort", 3]
    finally:
        server.stop()
