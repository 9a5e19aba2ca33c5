"""Issue 26 class 2, session 6: a person-only action re-entered from inside another one.

`rlm_result.save` / `to_jsonl` and an unframed display checked that the person's cell called the *outermost*
kernel function on the stack — so a model-made `functools.partial` (no frame of its own) that the kernel's own
code ran while doing the person's call passed as the person's: a citation whose `keys`/`get` is a partial of
`to_jsonl`/`save`/`display`, run by the person's `mine.to_jsonl(...)` / `mine.save(...)`; a partial of
`display` in a pandas `float_format` slot or as a bundle's `items`, run by the person's `display(...)`.
That overwrote data.jsonl / the person's notebook, and showed a picture of the kernel's answer box unframed.
Now the innermost frame that calls a person-only method must be the person's own code, and a `display()` is
the person's only when nothing but display machinery lies between it and the person's call. Model code comes
from a `--shared` run and from an MCP agent's cell; the person's next cell touches what it left. A real
kernel, scripted runs against tests/llm_server.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rlm_kernel.output import MODEL_LABEL
from tests.kernel.test_trust_follows_code import ok, shared_run
from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.sandbox.test_trust_chain_kernel import agent_cell

BOX = (
    "<svg width='400' height='60'><rect width='400' height='60' fill='white' stroke='#2e7d32' "
    "stroke-width='2'/><text x='10' y='35' fill='#2e7d32'>FINAL ANSWER 42 (rlm kernel)</text></svg>"
)
PERSON_FILE = "the person's own file\n"

# a citation-like object whose `keys` / `get` is the model's partial (dict(c) and c.get(...) call them)
CITE = """import functools
class Cite:
    def __getitem__(self, key):
        return 'x'
Cite.{slot} = {vehicle}
mine.citations.append(Cite())
"""
# (slot, vehicle, the person's call, the file the vehicle targets or None for a display)
WRITERS = {
    "citation_keys_to_jsonl_in_to_jsonl": (
        "keys",
        "functools.partial(mine.to_jsonl, 'data.jsonl', overwrite=True)",
        "mine.to_jsonl('mine.jsonl', overwrite=True)",
        "data.jsonl",
    ),
    "citation_keys_save_in_to_jsonl": (
        "keys",
        "functools.partial(mine.save, 'analysis.ipynb', overwrite=True)",
        "mine.to_jsonl('mine.jsonl', overwrite=True)",
        "analysis.ipynb",
    ),
    "citation_get_to_jsonl_in_save": (
        "get",
        "functools.partial(mine.to_jsonl, 'data.jsonl')",  # c.get('where'): overwrite='where'
        "mine.save('mine.ipynb', overwrite=True)",
        "data.jsonl",
    ),
    "citation_keys_display_in_to_jsonl": (
        "keys",
        f"functools.partial(display, {{'image/svg+xml': {BOX!r}}}, raw=True)",
        "mine.to_jsonl('mine.jsonl', overwrite=True)",
        None,
    ),
}
DISPLAYS = {
    "pandas_float_format": (
        "import functools\nimport pandas as pd\n"
        f"show = functools.partial(display, {{'image/svg+xml': {BOX!r}}}, raw=True)\n"
        "pd.set_option('display.float_format', show)",
        "import pandas as pd\ndf = pd.DataFrame({'a': [1.5]})\ndisplay(df)",
    ),
    "pandas_float_format_last_expression": (
        "import functools\nimport pandas as pd\n"
        f"show = functools.partial(display, {{'image/svg+xml': {BOX!r}}}, raw=True)\n"
        "pd.set_option('display.float_format', show)",
        "import pandas as pd\ndf = pd.DataFrame({'a': [2.5]})\ndf",
    ),
    "dict_subclass_items_in_the_publisher": (
        "import functools\nclass Bundle(dict):\n"
        f"    items = functools.partial(display, {{'image/svg+xml': {BOX!r}}}, raw=True)\n"
        "report = Bundle({'text/html': '<b>r</b>', 'text/plain': 'r'})",
        "display(report, raw=True)",
    ),
}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        shared_run(served, "x = 1")
        ok(served[1], "mine = rlm_result")  # the person keeps a run's result
        yield served


def _pictures(ex) -> list[dict]:
    found = ex.display + ([ex.result_data] if ex.result_data else [])
    return [d for d in found if "FINAL ANSWER 42" in str(d)]


def _framed(data: dict) -> bool:
    return MODEL_LABEL.replace("'", "&#x27;") in str(data.get("text/html", ""))


def _plant(served, how: str, code: str) -> None:
    if how == "shared":
        shared_run(served, code)
    else:
        ex = agent_cell(served[1], code)
        assert ex.ok, str(ex)


@pytest.mark.parametrize("how", ["shared", "agent"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_a_person_only_method_reentered_by_model_code_is_refused(served, name: str, how: str) -> None:
    _, kernel = served
    slot, vehicle, person, target = WRITERS[name]
    ok(kernel, "mine.citations.clear()")
    victim = Path(kernel.cwd, target) if target else None
    if victim is not None:
        victim.write_text(PERSON_FILE)
    _plant(served, how, CITE.format(slot=slot, vehicle=vehicle))
    ex = kernel.execute(person, timeout=120)
    if victim is not None:
        assert victim.read_text() == PERSON_FILE, f"{name}/{how}: the person's {target} was overwritten"
        assert "direct call of the method" in ex.all_text, str(ex)
    else:
        pictures = _pictures(ex)
        assert pictures and all(_framed(d) for d in pictures), pictures
    ok(kernel, "mine.citations.clear()")


@pytest.mark.parametrize("how", ["shared", "agent"])
@pytest.mark.parametrize("name", list(DISPLAYS))
def test_a_display_reentered_from_the_persons_display_is_framed(served, name: str, how: str) -> None:
    _, kernel = served
    model, person = DISPLAYS[name]
    _plant(served, how, model)
    ex = kernel.execute(person, timeout=120)
    pictures = _pictures(ex)
    assert pictures, str(ex)
    assert all(_framed(d) for d in pictures), pictures
    ok(kernel, "import pandas as pd\npd.reset_option('display.float_format')")


def test_the_persons_own_saves_and_displays_still_work(served) -> None:
    _, kernel = served
    ok(kernel, "mine.citations.clear()")
    ok(kernel, "mine.to_jsonl('own.jsonl', overwrite=True)\nmine.save('own.ipynb', overwrite=True)")
    ok(kernel, "def keep(r):\n    return r.to_jsonl('own2.jsonl', overwrite=True)")
    ok(kernel, "keep(mine)")
    assert all(Path(kernel.cwd, f).is_file() for f in ("own.jsonl", "own.ipynb", "own2.jsonl"))
    ex = ok(kernel, f"display({{'image/svg+xml': {BOX!r}}}, raw=True)\nh = display({{'text/plain': 'a'}}, "
            f"raw=True, display_id=True)\nh.update({{'image/svg+xml': {BOX!r}}}, raw=True)")  # fmt: skip
    assert len(_pictures(ex)) == 2 and not any(_framed(d) for d in _pictures(ex)), ex.display
    ex = ok(kernel, "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
    assert ex.display and not any(_framed(d) for d in ex.display)


# the other person-only helpers, re-entered the same ways: they already asked for their innermost caller
HELPERS = {
    "secrets_in_to_jsonl": (
        CITE.format(slot="keys", vehicle="functools.partial(load_context, '.env', allow_secrets=True)"),
        "mine.to_jsonl('mine.jsonl', overwrite=True)",
    ),
    "final_box_in_float_format": (
        "import functools\nimport pandas as pd\n"
        "pd.set_option('display.float_format', functools.partial(FINAL))",  # FINAL(1.5)
        "import pandas as pd\ndisplay(pd.DataFrame({'a': [1.5]}))",
    ),
}


@pytest.mark.parametrize("name", list(HELPERS))
def test_other_person_only_helpers_reentered_are_refused(served, name: str) -> None:
    _, kernel = served
    model, person = HELPERS[name]
    Path(kernel.cwd, ".env").write_text("API_TOKEN=sk-reentry-secret-0123456789\n")
    ok(kernel, "mine.citations.clear()\nload_context('nothing here')")
    _plant(served, "agent", model)
    ex = kernel.execute(person, timeout=120)
    assert "sk-reentry-secret" not in ex.all_text, str(ex)
    assert "sk-reentry-secret" not in str(ok(kernel, "print(context[:200])").stdout)
    assert "rlm kernel · FINAL() called in this cell" not in ex.all_text, str(ex)
    assert "must be written in your own cell" in ex.all_text or "not your cell" in ex.all_text, str(ex)
    ok(kernel, "import pandas as pd\npd.reset_option('display.float_format')\nmine.citations.clear()")
