"""Red team 7: a model-made callable run while the person's own call unpacks its `*args` / `**kwargs`.

`f(*a)` and `f(**k)` are rewritten by RestrictedPython to `_apply_(f, *a)` / `_apply_(f, **k)`, and the cell's
frame unpacks the arguments itself, at an instruction whose source position is the whole call `f(**k)`. A
model-made mapping whose `keys` is a `functools.partial` (a C-level callable: no frame of its own) is run
from that instruction — so the origin checks saw the person's cell calling `to_jsonl` / `display` by name
and let the partial act with the person's trust: the person's `mine.to_jsonl('mine.jsonl', **opts)` with an
`opts` a `--shared` run or an agent's cell left overwrote data.jsonl, `display('report', **opts)` showed a
picture of the kernel's answer box unframed, and the person's `read('notes.txt', **opts)` (their function
that loads with `allow_secrets=True`) loaded `.env`. (An `itertools.starmap` of such a partial unpacked by
`*items` is tested too: it was refused already.) Now a call that unpacks arguments is the person's only when
the frame its instruction entered is the `_apply_` guard. A real kernel, scripted runs against
tests/llm_server.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel.test_trust_follows_code import ok, shared_run
from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.repl.conftest import llm_env
from tests.sandbox.test_reentry_kernel import BOX, PERSON_FILE, _framed, _pictures, _plant

SHOW = f"functools.partial(display, {{'image/svg+xml': {BOX!r}}}, raw=True)"
# a mapping whose keys() is the model's partial (`f(**opts)` calls it), an iterable whose __iter__ is one
MAPPING = """import functools
class Opts:
    keys = {vehicle}
    def __getitem__(self, key):
        return 1
opts = Opts()
"""
ITERABLE = """import functools, itertools
items = itertools.starmap({vehicle}, [{args}])
"""
WRITERS = {
    "keys_to_jsonl": (
        MAPPING.format(vehicle="functools.partial(mine.to_jsonl, 'data.jsonl', overwrite=True)"),
        "mine.to_jsonl('mine.jsonl', **opts)",
        "data.jsonl",
    ),
    "keys_save": (
        MAPPING.format(vehicle="functools.partial(mine.save, 'analysis.ipynb', overwrite=True)"),
        "mine.save('mine.ipynb', **opts)",
        "analysis.ipynb",
    ),
    "iter_to_jsonl": (
        ITERABLE.format(vehicle="functools.partial(mine.to_jsonl, overwrite=True)", args="('data.jsonl',)"),
        "mine.to_jsonl(*items)",
        "data.jsonl",
    ),
}
DISPLAYS = {
    "keys_display": (MAPPING.format(vehicle=SHOW), "display('report', **opts)"),
    "iter_display": (ITERABLE.format(vehicle=SHOW, args="()"), "display(*items)"),
    # the person's own function that displays a raw bundle, run by the partial with the model's bundle
    "keys_persons_function": (
        MAPPING.format(vehicle=f"functools.partial(show_it, {{'image/svg+xml': {BOX!r}}})"),
        "show_it({'text/plain': 'report'}, **opts)",
    ),
}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[object, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        shared_run(served, "x = 1")
        ok(served[1], "mine = rlm_result")  # the person keeps a run's result
        ok(served[1], "def keep(r, **options):\n    return r.to_jsonl('mine.jsonl', overwrite=True)")
        ok(served[1], "def show_it(x, **options):\n    display(x, raw=True)")
        ok(served[1], "def read(p, **options):\n    return load_context(p, allow_secrets=True)")
        yield served


@pytest.mark.parametrize("how", ["shared", "agent"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_a_partial_run_while_the_persons_call_unpacks_cannot_write(served, name: str, how: str) -> None:
    _, kernel = served
    model, person, target = WRITERS[name]
    victim = Path(kernel.cwd, target)
    victim.write_text(PERSON_FILE)
    _plant(served, how, model)
    ex = kernel.execute(person, timeout=120)
    assert victim.read_text() == PERSON_FILE, f"{name}/{how}: the person's {target} was overwritten: {ex}"
    assert "reached through another object" in ex.all_text, str(ex)


@pytest.mark.parametrize("how", ["shared", "agent"])
@pytest.mark.parametrize("name", list(DISPLAYS))
def test_a_display_run_while_the_persons_call_unpacks_is_framed(served, name: str, how: str) -> None:
    _, kernel = served
    model, person = DISPLAYS[name]
    _plant(served, how, model)
    ex = kernel.execute(person, timeout=120)
    pictures = _pictures(ex)
    assert pictures, str(ex)
    assert all(_framed(d) for d in pictures), pictures


@pytest.mark.parametrize("how", ["shared", "agent"])
def test_the_persons_privileged_function_run_while_its_call_unpacks_is_refused(served, how: str) -> None:
    _, kernel = served
    Path(kernel.cwd, ".env").write_text("API_TOKEN=sk-unpacking-secret-0123456789\n")
    Path(kernel.cwd, "notes.txt").write_text("notes\n")
    ok(kernel, "load_context('')")
    _plant(served, how, MAPPING.format(vehicle="functools.partial(read, '.env')"))
    ex = kernel.execute("read('notes.txt', **opts)", timeout=120)
    assert "sk-unpacking-secret" not in ex.all_text, str(ex)
    assert "sk-unpacking-secret" not in ok(kernel, "print(str(context)[:300])").stdout
    assert "reached through another object" in ex.all_text, str(ex)


def test_the_persons_own_unpacking_calls_still_work(served) -> None:
    _, kernel = served
    ok(kernel, "mine.citations.clear()")
    ok(kernel, "args = ['own.jsonl']\noptions = {'overwrite': True}\nmine.to_jsonl(*args, **options)")
    ok(kernel, "keep(mine, **{'a': 1})")
    assert Path(kernel.cwd, "own.jsonl").is_file()
    ex = ok(kernel, f"bundles = [{{'image/svg+xml': {BOX!r}}}]\ndisplay(*bundles, **{{'raw': True}})")
    assert len(_pictures(ex)) == 1 and not any(_framed(d) for d in _pictures(ex)), ex.display
    ex = ok(kernel, f"show_it({{'image/svg+xml': {BOX!r}}}, **{{'a': 1}})")
    assert len(_pictures(ex)) == 1 and not any(_framed(d) for d in _pictures(ex)), ex.display
    ok(kernel, "read('notes.txt', **{'a': 1})")
