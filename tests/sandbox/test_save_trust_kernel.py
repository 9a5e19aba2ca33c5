"""Trust follows code for writing files (issue 26 class 2, third red team): `RLMResult.save` / `to_jsonl`
write (and with `overwrite=True` replace) `.ipynb`/`.jsonl` files in the context roots, and used to check only
whether a run's block was running. A function a `--shared` run left, a `__repr__` the display runs or a
`functools.partial` of the bound method, run later by the person's cell, wrote the person's files with the
person's trust — a notebook whose code cells are the model's code (`load_context('.env', allow_secrets=True)`
included), under the name of the person's own notebook. Now the call must be the person's own direct call
(`sandbox.origin.require_person_method_call`). A real kernel, scripted runs against tests/llm_server.py.
Controls: the person's direct call and a function of theirs called by name still save.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel.test_trust_follows_code import ok, shared_run
from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env

VICTIM = "analysis.ipynb"
ON_STACK = "model-written code is on the stack"
WRAPPED = "must be written in your own cell as a direct call of the method"

# (model code a `--shared` run leaves, the person's later cell, what the refusal says, the file it targets)
LEFT = {
    "function": (
        "def tidy():\n    rlm_result.save('analysis.ipynb', overwrite=True)\n    return 'tidied'",
        "tidy()",
        ON_STACK,
        VICTIM,
    ),
    "repr_run_by_the_display": (
        "class Pretty:\n    def __repr__(self):\n"
        "        rlm_result.to_jsonl('data.jsonl', overwrite=True)\n        return 'pretty'\np = Pretty()",
        "p",
        ON_STACK,
        "data.jsonl",
    ),
    "partial_of_the_bound_method": (
        "import functools\nsummary = functools.partial(rlm_result.save, 'analysis.ipynb', overwrite=True)",
        "summary()",
        WRAPPED,
        VICTIM,
    ),
    "map_of_the_bound_method": (
        "lazy = map(rlm_result.to_jsonl, ['data.jsonl'])",
        "list(lazy)",
        WRAPPED,
        "data.jsonl",
    ),
    "methodcaller": (
        "import operator\nsaver = operator.methodcaller('save', 'analysis.ipynb', overwrite=True)",
        "saver(rlm_result)",
        WRAPPED,
        VICTIM,
    ),
}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        shared_run(served, "x = 1")  # an `rlm_result` for the later runs' code to use
        yield served


@pytest.mark.parametrize("name", list(LEFT))
def test_model_code_run_by_the_person_writes_no_file(served, name: str) -> None:
    _, kernel = served
    model, person, phrase, target = LEFT[name]
    victim = Path(kernel.cwd, target)
    victim.write_text("the person's own file\n")
    shared_run(served, model)
    ex = kernel.execute(person, timeout=120)
    assert phrase in ex.all_text, (person, str(ex))
    assert victim.read_text() == "the person's own file\n", f"{name}: the person's {target} was overwritten"


def test_the_persons_own_calls_still_save(served) -> None:
    _, kernel = served
    ok(kernel, "rlm_result.save('mine.ipynb', overwrite=True)")
    ok(kernel, "def keep(p):\n    return rlm_result.to_jsonl(p, overwrite=True)")
    ok(kernel, "keep('mine.jsonl')")
    assert Path(kernel.cwd, "mine.ipynb").is_file() and Path(kernel.cwd, "mine.jsonl").is_file()
