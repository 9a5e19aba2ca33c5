"""Issue 26 class 2: what model code stores on the person's objects is listed, and stays untrusted.

A `--shared` run listed the names its model code bound, but not the attributes and items it set on objects
the person already had: `person.helper = f`, `table['k'] = f`, `setattr(obj, 'go', f)`, `items[0] = f`,
`del person.old`, one step in (`person.config['k'] = f`). Those are where the person's later code looks for
its own behaviour, so they are now listed with the bindings (`rlm_result.model_bound`, the note under the
run; `%rlm agent` for MCP agents' cells). A model function stored there keeps the model's trust when the
person calls it: it cannot read `.env` with `allow_secrets=True`, start a run or change a setting (also
through a `functools.partial` of the person's own privileged function). A real kernel, scripted runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel.test_trust_follows_code import (
    ON_STACK,
    READ,
    SECRET,
    max_tokens_row,
    ok,
    probe,
    refused,
    shared_run,
)
from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.sandbox.test_trust_chain_kernel import PERSONS, REACHED, agent_cell


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        Path(served[1].cwd, ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
        yield served


OBJECTS = (
    "class Holder:\n    pass\nperson = Holder()\nperson.old = 1\nperson.config = {}\n"
    "table = {'keep': 1}\nitems = [0, 1]\ndef tool():\n    return 1\n"
)

MODEL = (
    "import functools\n"
    f"def helper():\n    return {READ}\n"
    "person.helper = helper\n"
    "table['k'] = helper\n"
    "setattr(person, 'go', functools.partial(read, '.env'))\n"
    "items[0] = helper\n"
    "del person.old\n"
    "person.config['hook'] = helper\n"
    "tool.extra = helper\n"
    "table['ask'] = functools.partial(ask, 'model question')\n"
    "table['tune'] = functools.partial(tune)\n"
    "mine = {}\nmine['x'] = 1\n"  # a dict the block made itself: its name is listed, not its items
)

LISTED = {
    "person.helper": "set on your object",
    "table['k']": "set on your object",
    "person.go": "set on your object",
    "items[0]": "set on your object",
    "person.old": "deleted from your object",
    "person.config['hook']": "set on your object",
    "tool.extra": "set on your object",
    "table['ask']": "set on your object",
    "table['tune']": "set on your object",
    "mine": "new",
}


def test_writes_to_the_persons_objects_are_listed_and_stay_untrusted(served) -> None:
    _, kernel = served
    ok(kernel, PERSONS + OBJECTS)
    text = shared_run(served, MODEL)
    bound = probe(kernel, "rlm_result.model_bound")
    for path, what in LISTED.items():
        assert bound.get(path) == what, (path, bound)
    assert "table['keep']" not in bound and "mine['x']" not in bound, bound
    for path in ("person.helper", "table['k']", "person.go", "person.config['hook']"):
        assert path in text, (path, text)  # the one line under the run
    # the model's functions stored there keep the model's trust when the person calls them
    for call in ("person.helper()", "table['k']()", "items[0]()", "person.config['hook']()", "tool.extra()"):
        refused(kernel, call, ON_STACK)
    refused(kernel, "person.go()", REACHED)
    before = probe(kernel, "len(rlm_result.trajectory)")
    ex = kernel.execute("table['ask']()", timeout=120)
    assert not ex.ok and "SandboxError" in ex.all_text, ex.all_text
    assert probe(kernel, "len(rlm_result.trajectory)") == before  # no run started
    ex = kernel.execute("table['tune']()", timeout=60)
    assert not ex.ok and "SandboxError" in ex.all_text, ex.all_text
    assert "93" not in max_tokens_row(kernel)


def test_the_persons_own_writes_and_reads_are_not_listed(served) -> None:
    _, kernel = served
    ok(kernel, OBJECTS + "person.mine = 2\ntable['mine'] = 2")
    shared_run(served, "seen = [person.config, table['keep'], items[1]]\ncount = len(table)")
    bound = probe(kernel, "rlm_result.model_bound")
    assert bound == {"seen": "new", "count": "new"}, bound


def test_an_agent_cells_writes_to_the_persons_objects_are_listed(served) -> None:
    _, kernel = served
    ok(kernel, OBJECTS)
    ex = agent_cell(
        kernel,
        f"def agent_helper():\n    return {READ}\n"
        "person.agent_fn = agent_helper\ntable['agent'] = agent_helper",
    )
    assert ex.ok, str(ex)
    listed = ok(kernel, "%rlm agent").all_text
    for path in ("person.agent_fn (set on your object)", "table['agent'] (set on your object)"):
        assert path in listed, listed
    refused(kernel, "person.agent_fn()", ON_STACK)
