"""Code written for the reference RLM library: context_0/context_1 with load_context(append=True),
SHOW_VARS() returning its text (shown once), FINAL_VAR(name) returning the value, every ```repl block run."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script


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
    ex = kernel.execute("answer = 41 + 1\ngot = FINAL_VAR('answer')\nprint(got + 1)", timeout=30)
    assert ex.ok and "43" in ex.stdout
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
