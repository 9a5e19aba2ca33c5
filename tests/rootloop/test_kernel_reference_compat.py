"""Code written for the reference RLM library: context_0/context_1 with load_context(append=True),
SHOW_VARS() returning its text (shown once), FINAL_VAR(name) returning the value, every ```repl block run."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import SUB_MARK, Script


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        yield served


def _last(ex) -> object:  # noqa: ANN001
    assert ex.ok, ex
    return json.loads(ex.stdout.strip().splitlines()[-1])


def test_appended_contexts_are_numbered_and_a_fresh_load_resets_them(served) -> None:
    _, kernel = served
    ex = kernel.execute(
        "import json\nload_context('first text')\nload_context('second text', append=True)\n"
        "load_context('third text', append=True)\n"
        "print(json.dumps([context, context_0, context_1, context_2]))",
        timeout=30,
    )
    assert _last(ex) == ["first text", "first text", "second text", "third text"]
    ex = kernel.execute(
        "load_context('fresh')\nprint(json.dumps([context, context_0, repl_get('context_1', 'gone')]))",
        timeout=30,
    )
    assert _last(ex) == ["fresh", "fresh", "gone"]
    bad = kernel.execute("load_context('x', append='yes')", timeout=30)
    assert not bad.ok and "append must be True or False" in str(bad)
    kernel.execute("context_0 = 'overwritten'", timeout=30)
    kept = kernel.execute("print(context_0)", timeout=30)
    assert kept.stdout.strip() == "fresh"  # a preloaded name: repaired after the cell, like `context`


def test_show_vars_returns_its_text_shown_once_and_final_var_returns_the_value(served) -> None:
    _, kernel = served
    ex = kernel.execute("alpha = [1, 2, 3]\nSHOW_VARS()", timeout=30)
    assert ex.ok, ex
    assert ex.stdout.count("alpha") == 1 and ex.result is None  # printed once, not echoed as a result
    ex = kernel.execute(
        "listing = SHOW_VARS()\nprint(type(listing).__name__, 'alpha' in listing)", timeout=30
    )
    assert "str True" in ex.stdout
    # FINAL_VAR returns the answer's text, str(value), as the reference's FINAL_VAR did (issue 27 item 5)
    ex = kernel.execute(
        "answer = 41 + 1\ngot = FINAL_VAR('answer')\nprint(got + '!', type(got).__name__)", timeout=30
    )
    assert ex.ok and "42! str" in ex.stdout
    shown = kernel.execute("FINAL_VAR('answer')", timeout=30)
    assert shown.ok and shown.result is None  # the FINAL box only, not the value again


def test_every_repl_block_of_a_reply_runs_in_order_until_final(served) -> None:
    server, kernel = served
    server.reset()
    reply = (
        "Two steps.\n```repl\nfirst = len(context)\nprint(first)\n```\nthen\n"
        "```repl\nsecond = first * 2\nvars_text = SHOW_VARS()\nFINAL(second)\n```\n"
        "```repl\nnever = 1\n```"
    )
    server.reply_with(Script(root=[reply]))
    ex = kernel.execute(
        "r = rlm_run('q', context='abcd')\nprint(json.dumps([r.answer, r.iterations, "
        "'never' in r.namespace, r.trajectory[0].stdout.count('first')]))",
        timeout=60,
    )
    assert _last(ex) == ["8", 1, False, 1]


def test_errors_in_model_code_string_returns_error_text_to_the_root_but_cells_raise(served) -> None:
    """`%rlm set errors_in_model_code=string`: a failed call in the root's block returns "Error: …" (the
    reference library's way); the same call in the person's cell still raises; a bad value is refused."""
    from tests.llm_server import Fault

    server, kernel = served
    server.reset()
    bad = kernel.execute("%rlm set errors_in_model_code=ignore", timeout=30)
    assert not bad.ok and "errors_in_model_code" in str(bad) and "raise or string" in str(bad)
    assert kernel.execute("%rlm set errors_in_model_code=string", timeout=30).ok
    try:
        child = lambda rec: Fault.http(500) if "broken" in rec.last_user else "fine"  # noqa: E731
        server.reply_with(child)
        cell = kernel.execute("llm_query('broken call')", timeout=60)
        assert not cell.ok and "QueryError" in str(cell) and "llm_query failed" in str(cell)
        block = "got = llm_query('broken ' + context)\nprint(got[:6])\nFINAL(got)"
        server.reply_with(Script(root=[f"```repl\n{block}\n```"], child=child))
        ex = kernel.execute(
            "r = rlm_run('q', context='abcd', max_iterations=1, best_effort=False)\n"
            "print(json.dumps([r.trajectory[0].error, r.trajectory[0].stdout, "
            "r.namespace['got'][:25]]))",
            timeout=60,
        )
        error, stdout, got = _last(ex)
        assert error is None and stdout == "Error:\n" and got == "Error: llm_query failed: "
    finally:
        assert kernel.execute("%rlm set errors_in_model_code=", timeout=30).ok


# -- issue 27 item 5 ----------


def test_print_of_show_vars_prints_once_and_the_answer_dict_is_not_listed(served) -> None:
    server, kernel = served
    server.reset()
    ex = kernel.execute("beta = 'b'\nprint(SHOW_VARS())", timeout=30)
    assert ex.ok and ex.stdout.count("beta") == 1, ex
    block = "gamma = len(context)\nprint(SHOW_VARS())\nFINAL(gamma)"
    server.reply_with(Script(root=[f"```repl\n{block}\n```"]))
    ex = kernel.execute(
        "r = rlm_run('q', context='abcd')\nout = r.trajectory[0].stdout\n"
        "print(json.dumps([r.answer, out.count('gamma'), 'answer' in out]))",
        timeout=60,
    )
    assert _last(ex) == ["4", 1, False]


def test_a_follow_up_gets_history_and_a_fresh_answer_dict(served) -> None:
    server, kernel = served
    server.reset()
    first = "answer['content'] = len(context)\nanswer['ready'] = True"
    second = (
        "print(answer['ready'], answer['content'], len(history), history[0]['role'])\n"
        "m = len(context)\nFINAL(m)"
    )
    script = Script(root=[f"```repl\n{first}\n```", f"```repl\n{second}\n```"])
    server.reply_with(script)
    ex = kernel.execute(
        "r = rlm_run('q', context='abcd')\nr2 = rlm_run('again?', continue_from=r)\n"
        "print(json.dumps([r.answer, r2.answer, r2.trajectory[0].stdout.strip(), "
        "len(r2.namespace['history_0']) == len(r.history), 'history_1' in r2.namespace]))",
        timeout=60,
    )
    got = _last(ex)
    assert got[:2] == ["4", "4"] and got[2].startswith("False None ") and got[2].endswith(" user")
    assert got[3] is True and got[4] is True  # the follow-up's own conversation is history_1 after it
    assert "1 earlier conversation is in the `history` variable" in script.root_prompts[1]


def test_shared_runs_keep_history_and_are_told_how_many_contexts(served) -> None:
    server, kernel = served
    server.reset()
    script = Script(root=["```repl\nk = len(context_1)\nFINAL(k)\n```"] * 2)
    server.reply_with(script)
    ex = kernel.execute(
        "load_context('first text')\nload_context('second', append=True)\n"
        "r = rlm_run('q', shared=True)\nr = rlm_run('q', shared=True)\n"
        "print(json.dumps([r.answer, len(history_0), len(history_1) > 0, 'history_2' in dir()]))",
        timeout=60,
    )
    got = _last(ex)
    assert got[0] == "6" and got[1] > 0 and got[2] is True and got[3] is False
    assert "2 contexts are loaded (context_0 through context_1" in script.root_prompts[0]
    assert "1 earlier conversation is in the `history` variable" in script.root_prompts[1]


def test_tools_may_be_values_or_callable_objects_and_sub_tools_set_what_sub_rlms_get(served) -> None:
    server, kernel = served
    server.reset()
    cell = (
        "rates = {'eur': 1.1, 'gbp': 1.3}\n"
        "class Scale:\n"
        "    def __call__(self, x: float, factor: float = 2.0) -> float:\n"
        "        '''Scale x by factor.'''\n"
        "        return x * factor\n"
        "scale = Scale()\n"
        "def hint() -> str:\n"
        "    return 'sub only'\n"
    )
    assert kernel.execute(cell, timeout=30).ok
    root = "rates['eur'] = 9\nv = scale(rates['gbp'], 10)\ns = rlm_query('use hint: ' + context)\nprint(v, s)"
    sub = (
        "t = hint() if repl_get('hint') else 'no hint'\nu = repl_get('rates') is not None\n"
        "FINAL(t + ' ' + str(u))"
    )
    script = Script(
        root=[f"```repl\n{root}\n```", "```repl\nFINAL_VAR('v')\n```"], sub=[f"```repl\n{sub}\n```"]
    )
    server.reply_with(script)
    ex = kernel.execute(
        "r = rlm_run('q', context='abc', max_depth=2, "
        "tools={'rates': (rates, 'exchange rates to USD'), 'scale': scale}, sub_tools={'hint': hint})\n"
        "print(json.dumps([r.answer, r.trajectory[0].stdout.strip(), rates['eur']]))",
        timeout=90,
    )
    answer, stdout, eur = _last(ex)
    assert answer == "13.0" and stdout == "13.0 sub only False" and eur == 1.1  # the run had its own copy
    system = next(r.prompt for r in server.requests if "Tools (" in r.prompt and SUB_MARK not in r.prompt)
    assert "- `rates`: a dict value, len 2\n    exchange rates to USD" in system
    assert "- `scale(x: float, factor: float = 2.0) -> float`\n    Scale x by factor." in system
    bad = kernel.execute("import re\nrlm_run('q', context='abc', tools={'pat': re.compile('x')})", timeout=30)
    assert not bad.ok and "plain data" in str(bad)
