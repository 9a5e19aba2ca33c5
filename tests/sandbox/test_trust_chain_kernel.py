"""Trust follows code, round 3 red team (issue 26, classes 1 and 2): a real kernel, scripted `%%rlm` runs.

Three families the first fix left open:

- a person's own privileged function (one that calls `load_context(..., allow_secrets=True)`, `rlm_run` or a
  magic) reached through a wrapper model code made — `functools.partial`, `map`, `sorted(key=)`, … — left
  under a name the person's next cell calls: no model frame is on the stack and the helper's own call site
  is the person's, so only the whole chain of callers tells (`sandbox.origin.require_direct_chain`);
- `FINAL()` called by model-written code outside a run (a function a `--shared` run left, a partial, an MCP
  agent's cell): the kernel's own styled "FINAL ANSWER" box must not be shown on its behalf;
- a run's result the kernel shows as its own viewer, edited afterwards by model code (a later `--shared`
  run appends a forged citation, clears the trajectory): shown sanitised, not as the kernel's display.

Controls: the person's own functions called by name keep their privilege; a person's FINAL and an untouched
`rlm_result` keep the kernel's styled displays.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel.test_trust_follows_code import SECRET, ok, probe, refused, shared_run
from tests.kernel_client import Execution, KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        Path(served[1].cwd, ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
        yield served


# a C-level wrapper leaves the cell running another instruction; a Python one (a sandbox guard, a library)
# is a frame that is not the person's: either way the refusal names the person's function
REACHED = "your function read() that does it was"
BY_LIBRARY = "your function read() that does it was called by library or kernel code"

# the person's functions, defined in an earlier cell of their own
PERSONS = (
    "def read(p):\n    return load_context(p, allow_secrets=True)\n"
    "def ask(q):\n    return rlm_run(q, max_iterations=1)\n"
    "def tune():\n    %rlm set max_tokens=93\n"
)

# (model code the shared run leaves, the person's next cell, what the refusal says)
WRAPPED = {
    "partial": ("import functools\nsummary = functools.partial(read, '.env')", "summary()", REACHED),
    "map": ("lazy = map(read, ['.env'])", "list(lazy)", REACHED),
    "filter": ("lazy = filter(read, ['.env'])", "list(lazy)", REACHED),
    "sorted_key": ("keyer = read", "sorted(['.env'], key=keyer)", REACHED),
    "methodcaller": (
        "import operator\nclass Holder:\n    pass\nholder = Holder()\nholder.go = read\n"
        "opener = operator.methodcaller('go', '.env')",
        "opener(holder)",
        REACHED,
    ),
    "lru_cache": (
        "import functools\ncached = functools.lru_cache(functools.partial(read, '.env'))",
        "cached()",
        REACHED,
    ),
    "defaultdict_factory": (
        "import collections, functools\ntable = collections.defaultdict(functools.partial(read, '.env'))",
        "table['x']",
        REACHED,
    ),
    "starmap": ("import itertools\nlazy = itertools.starmap(read, [('.env',)])", "list(lazy)", REACHED),
    "property_of_a_partial": (
        "import functools\nclass Doc:\n    text = property(functools.partial(read))\n"
        "    def __fspath__(self):\n        return '.env'\ndoc = Doc()",
        "doc.text",
        REACHED,
    ),
    "exitstack_callback": (
        "import contextlib\nstack = contextlib.ExitStack()\nstack.callback(read, '.env')",
        "stack.close()",
        BY_LIBRARY,
    ),
    "rlm_run_through_a_partial": (
        "import functools\ngo = functools.partial(ask, 'the model chose this question')",
        "go()",
        "your function ask() that does it was",
    ),
    "rlm_run_through_map": (
        "runs = map(ask, ['the model chose this question'])",
        "list(runs)",
        "your function ask() that does it was",
    ),
}


@pytest.mark.parametrize("name", list(WRAPPED))
def test_a_persons_privileged_function_wrapped_by_model_code_is_refused(served, name: str) -> None:
    server, kernel = served
    ok(kernel, PERSONS)
    model, person, phrase = WRAPPED[name]
    shared_run(served, model)
    before = len(server.requests)
    refused(kernel, person, phrase)
    assert len(server.requests) == before, "a run was started through the person's function"


def test_a_wrapper_of_an_earlier_run_of_the_same_cell_is_refused(served) -> None:
    """Cells with the same source share a filename: the function a wrapper holds comes from an earlier run
    of the cell, not from the run that calls the wrapper, and must be called by name like any other."""
    _, kernel = served
    cell = (
        "def reader(p):\n    return load_context(p, allow_secrets=True)\n"
        "try:\n    later()\nexcept NameError:\n    pass"
    )
    ex = kernel.execute(cell, timeout=60)
    assert ex.ok, str(ex)  # `later` does not exist yet
    shared_run(served, "import functools\nlater = functools.partial(reader, '.env')")
    refused(kernel, cell, "your function reader() that does it was")


def max_tokens_row(kernel: KernelHarness) -> str:
    """The max_tokens line of `%rlm show` (the whole table holds ports and other numbers)."""
    rows = ok(kernel, "%rlm show").result or ""
    return next((line for line in rows.splitlines() if line.startswith("max_tokens")), "")


def test_a_persons_magic_function_wrapped_by_model_code_is_refused(served) -> None:
    _, kernel = served
    ok(kernel, PERSONS + "%rlm set max_tokens=")
    shared_run(served, "import functools\ntidy = functools.partial(tune)")
    refused(kernel, "tidy()", "your function tune() that does it was")
    assert "93" not in max_tokens_row(kernel)
    ok(kernel, "tune()")  # the person's own call, by name, keeps its power
    assert "93" in max_tokens_row(kernel)
    ok(kernel, "%rlm set max_tokens=")


def test_a_persons_function_called_by_name_keeps_its_privilege(served) -> None:
    _, kernel = served
    ok(kernel, PERSONS)
    shared_run(served, "path = '.env'")  # a plain value model code made: data is the person's to use
    for code in (
        "read('.env')",
        "text = read(\n    '.env',\n)",
        "def outer():\n    return read('.env')\nouter()",
        "[read(p) for p in ['.env']]",
        "class Loader:\n    def get(self):\n        return read('.env')\nloader = Loader()\nloader.get()",
        "class Mine:\n    def __repr__(self):\n        return str(read('.env'))\nrepr(Mine())",
        "g = (read(p) for p in ['.env'])\nnext(g)",
        "read(path)",
    ):
        ok(kernel, "load_context('')")
        ex = kernel.execute(code, timeout=120)
        assert ex.ok, (code, str(ex))
        assert probe(kernel, "'OPENAI_API_KEY' in context"), code
    ok(kernel, "load_context('')")


def _kernel_box(ex) -> bool:
    """True if the cell showed the kernel's own styled FINAL box."""
    return any("border:2px solid" in str(d.get("text/html", "")) for d in ex.display)


def test_final_called_by_model_code_gets_no_kernel_box(served) -> None:
    _, kernel = served
    shared_run(
        served,
        "import functools\ndef finish():\n    FINAL('the model says: 42')\n"
        "finish_later = functools.partial(FINAL, 'the model says: 43')",
    )
    for call, said in (("finish()", "42"), ("finish_later()", "43")):
        ex = ok(kernel, call)
        assert not _kernel_box(ex), (call, ex.display)
        shown = " ".join(str(d) for d in ex.display)
        assert f"the model says: {said}" in shown and "model-written code" in shown, shown
    assert _kernel_box(ok(kernel, "FINAL('the person says: 44')"))  # control: the person's own FINAL


def agent_cell(kernel: KernelHarness, code: str) -> Execution:
    """Run `code` as an MCP agent's cell (execute_request metadata {"rlm": {"origin": "agent"}}, what
    `rlm-kernel mcp` sends for run_cell): model-written code."""
    content = {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    msg = kernel.kc.session.msg("execute_request", content, metadata={"rlm": {"origin": "agent"}})
    kernel.kc.shell_channel.send(msg)
    return kernel.collect(msg["header"]["msg_id"], 120)


def test_final_in_an_agent_cell_gets_no_kernel_box(served) -> None:
    _, kernel = served
    ex = agent_cell(kernel, "FINAL('the agent says: 45')")
    assert ex.ok, str(ex)
    assert not _kernel_box(ex), ex.display
    assert "the agent says: 45" in str(ex.display)


def test_builtins_an_agent_cell_shadows_are_removed_and_its_names_listed(served) -> None:
    """An agent's `len`/`sorted` would run in every later person's cell and see the person's data."""
    _, kernel = served
    ex = agent_cell(
        kernel,
        "seen = []\ndef len(x):\n    seen.append(x)\n    return 0\n"
        "def sorted(x, **k):\n    seen.append(x)\n    return []\nagent_made = 1",
    )
    assert ex.ok, str(ex)
    assert "shadowed Python builtin" in ex.stdout, ex.stdout  # the agent is told
    assert probe(kernel, "[len('person data'), sorted([3, 1])]") == [11, [1, 3]]
    assert probe(kernel, "seen") == []
    listed = ok(kernel, "%rlm agent").all_text
    for name in ("len (shadowed a builtin: removed)", "sorted (shadowed a builtin: removed)", "agent_made"):
        assert name in listed, listed


def _styled(ex) -> bool:
    html = str((ex.result_data or {}).get("text/html", ""))
    return "<style>" in html and "class='rlmv'" in html


EDITS = {
    "forged_citation": "r1.citations.append({'where': 'report.pdf, page 1', 'quote': 'FORGED CITATION'})",
    "cleared_trajectory": "r1.trajectory.clear()",
    "dropped_turn": "r1.trajectory.pop()",
}


@pytest.mark.parametrize("name", list(EDITS))
def test_a_result_model_code_edited_is_not_shown_as_the_kernels(served, name: str) -> None:
    server, kernel = served
    server.reset()
    server.reply_with(Script(root=[repl("x = 1")]))
    ok(kernel, "%%rlm --max-iterations 2 --max-no-code-turns 1\nDo it.")
    ok(kernel, "r1 = rlm_result")
    assert _styled(ok(kernel, "r1")), "control: the untouched result shows the kernel's viewer"
    shared_run(served, EDITS[name])
    ex = ok(kernel, "r1")
    assert not _styled(ex), ex.result_data
    assert SECRET not in ex.all_text
    assert "<style" not in str(ex.result_data) and "style=" not in str(ex.result_data)
