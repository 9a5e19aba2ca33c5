"""Trust follows who wrote the code (issue 26, class 2): a real kernel, scripted `%%rlm --shared` runs.

A `--shared` run's blocks run in the notebook's namespace. Whatever they leave there — a redefined function,
a shadowed builtin, a rebound helper, a `functools.partial` of a helper with `allow_secrets=True`, an
object whose `_repr_html_`/`__repr__`/`__eq__`/`__del__`/property does the privileged thing, a generator —
must stay untrusted when the person's next cell uses it: `.env` is never read, and the refusal says that
model-written code was involved. Controls: the person's own functions keep their privilege, tools keep
working, model code's plain results are usable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl

SECRET = "sk-trust-follows-code-canary-5c1e"
READ = "load_context('.env', allow_secrets=True)"
ON_STACK = "model-written code is on the stack"
DIRECT = "must be written in your own cell as a direct call"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        Path(served[1].cwd, ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
        yield served


def ok(kernel: KernelHarness, code: str, timeout: float = 120):
    ex = kernel.execute(code, timeout=timeout)
    assert ex.ok, (code, str(ex))
    assert SECRET not in ex.all_text
    return ex


def probe(kernel: KernelHarness, expr: str) -> object:
    return json.loads(ok(kernel, f"import json\nprint(json.dumps({expr}))").stdout.strip().splitlines()[-1])


def shared_run(served, *blocks: str, flags: str = "") -> str:
    """Run `blocks` as the root's code in a `%%rlm --shared` run; every block must succeed."""
    server, kernel = served
    server.reset()
    server.reply_with(Script(root=[repl(b) for b in blocks]))
    ex = ok(
        kernel, f"%%rlm --shared --max-iterations {len(blocks) + 1} --max-no-code-turns 1 {flags}\nDo it."
    )
    errors = probe(kernel, "[t.error for t in rlm_result.trajectory if t.code is not None]")
    assert not any(errors), errors
    return ex.all_text


def refused(kernel: KernelHarness, code: str, phrase: str) -> str:
    """Run the person's `code`: `.env` is neither shown nor loaded into `context`; the error says `phrase`."""
    ok(kernel, "load_context('')")
    ex = kernel.execute(code, timeout=120)
    text = ex.all_text
    assert SECRET not in text, (code, text)
    assert probe(kernel, "'OPENAI_API_KEY' in context") is False, code  # nothing was read on the side
    assert phrase in text, (code, str(ex))
    return text


# (model code the shared run leaves behind, the person's next cell, what the refusal says)
ATTACKS = {
    "redefined_function": (
        f"def summarize(x):\n    return {READ}",
        "summarize('some text')",
        ON_STACK,
    ),
    "class_method": (
        f"class Helper:\n    def run(self):\n        return {READ}\nh = Helper()",
        "h.run()",
        ON_STACK,
    ),
    "repr": (
        f"class Shown:\n    def __repr__(self):\n        return {READ}\nshown = Shown()",
        "text = repr(shown)",
        ON_STACK,
    ),
    "eq": (
        f"class Same:\n    def __eq__(self, other):\n        return {READ}\nsame = Same()",
        "same == 1",
        ON_STACK,
    ),
    "property": (
        f"class Box:\n    @property\n    def value(self):\n        return {READ}\nbox = Box()",
        "box.value",
        ON_STACK,
    ),
    "generator": (
        f"def pages():\n    yield {READ}\ng = pages()",
        "next(g)",
        ON_STACK,
    ),
    "lambda_in_a_list": (
        f"steps = [lambda: {READ}]",
        "steps[0]()",
        ON_STACK,
    ),
    "dict_subclass_dunder_called_from_c": (
        f"class Table(dict):\n    def __missing__(self, key):\n        return {READ}\ntable = Table()",
        "table['x']",
        ON_STACK,
    ),
    "class_constructor": (
        f"class Auto:\n    def __init__(self):\n        self.text = {READ}",
        "Auto()",
        ON_STACK,
    ),
    "format_in_an_fstring": (
        f"class Fmt:\n    def __format__(self, spec):\n        return str({READ})\nfmt = Fmt()",
        "text = f'{fmt}'",
        ON_STACK,
    ),
    "iter_in_a_for_loop": (
        f"class Rows:\n    def __iter__(self):\n        return iter([{READ}])\nrows = Rows()",
        "for row in rows:\n    pass",
        ON_STACK,
    ),
    "bool_in_an_if": (
        f"class Flag:\n    def __bool__(self):\n        {READ}\n        return True\nflag = Flag()",
        "if flag:\n    pass",
        ON_STACK,
    ),
    "hash_as_a_dict_key": (
        f"class Key:\n    def __hash__(self):\n        {READ}\n        return 1\nkey = Key()",
        "d = {key: 1}",
        ON_STACK,
    ),
    "fspath_given_to_the_persons_own_call": (
        f"class Where:\n    def __fspath__(self):\n        {READ}\n        return 'x.txt'\nwhere = Where()",
        "load_context(where)",
        ON_STACK,
    ),
    "sorted_key_calls_model_function": (
        f"def keyer(x):\n    return {READ}",
        "sorted(['a', 'b'], key=keyer)",
        ON_STACK,
    ),
    "partial_of_the_helper": (
        "import functools\nsummarize = functools.partial(load_context, '.env', allow_secrets=True)",
        "summarize()",
        DIRECT,
    ),
    "partial_driven_by_map": (
        "import functools\nlazy = map(functools.partial(load_context, allow_secrets=True), ['.env'])",
        "list(lazy)",
        DIRECT,
    ),
    "starmap_positional_allow_secrets": (
        "import itertools\n"
        "lazy = itertools.starmap(load_context, [('.env', 'auto', 'utf-8', 'strict', True)])",
        "list(lazy)",
        DIRECT,
    ),
    "methodcaller": (
        "import operator\nclass Holder:\n    pass\nholder = Holder()\nholder.read = load_context\n"
        "opener = operator.methodcaller('read', '.env', allow_secrets=True)",
        "opener(holder)",
        DIRECT,
    ),
    "lru_cache_of_a_partial": (
        "import functools\n"
        "cached = functools.lru_cache(functools.partial(load_context, '.env', allow_secrets=True))",
        "cached()",
        DIRECT,
    ),
    "partial_as_sorted_key": (
        "import functools\nkeyer2 = functools.partial(load_context, allow_secrets=True)",
        "sorted(['.env'], key=keyer2)",
        DIRECT,
    ),
    "dataclass_default_factory": (
        "import dataclasses, functools\n"
        "@dataclasses.dataclass\nclass Rec:\n"
        "    text: str = dataclasses.field(\n"
        "        default_factory=functools.partial(load_context, '.env', allow_secrets=True))",
        "Rec()",
        "library or kernel code",
    ),
    "filter_with_a_partial": (
        "import functools\nlazy = filter(functools.partial(load_context, allow_secrets=True), ['.env'])",
        "list(lazy)",
        DIRECT,
    ),
    "iter_with_sentinel": (
        "import functools\nlazy = iter(functools.partial(load_context, '.env', allow_secrets=True), None)",
        "next(lazy)",
        DIRECT,
    ),
    "cmp_to_key_of_a_partial": (
        "import functools\nbykey = functools.cmp_to_key(functools.partial(load_context, allow_secrets=True))",
        "sorted(['auto', '.env'], key=bykey)",  # compares ('.env', 'auto'): load_context(source, kind)
        DIRECT,
    ),
    "defaultdict_factory": (
        "import collections, functools\n"
        "lookup_table = collections.defaultdict(functools.partial(load_context, '.env', allow_secrets=True))",
        "lookup_table['anything']",
        DIRECT,
    ),
    "partialmethod_on_a_class": (
        "import functools\nclass Loader:\n    def __init__(self):\n        self.path = '.env'\n"
        "    def __fspath__(self):\n        return self.path\n"
        "    read = functools.partialmethod(load_context, allow_secrets=True)\nloader = Loader()",
        "loader.read()",
        DIRECT,
    ),
    "property_holding_a_partial": (
        "import functools\nclass Path2:\n    def __fspath__(self):\n        return '.env'\n"
        "    text = property(functools.partial(load_context, allow_secrets=True))\np2 = Path2()",
        "p2.text",
        DIRECT,
    ),
    "partial_via_exitstack": (
        "import contextlib\nstack = contextlib.ExitStack()\n"
        "stack.callback(load_context, '.env', allow_secrets=True)",
        "stack.close()",
        "library or kernel code",
    ),
    "reduce_with_a_partial": (
        "import functools\nfolder = functools.partial(functools.reduce, "
        "functools.partial(load_context, allow_secrets=True))",
        "folder(['.env', 'auto'])",
        "library or kernel code",
    ),
    "cached_property_of_a_partial": (
        "import functools\nclass Lazy:\n    def __fspath__(self):\n        return '.env'\n"
        "    text = functools.cached_property(functools.partial(load_context, allow_secrets=True))\n"
        "lazy_obj = Lazy()",
        "lazy_obj.text",
        "library or kernel code",
    ),
    "pandas_apply_of_a_model_function": (
        f"import pandas as pd\ndef per_row(v):\n    return str({READ})\nframe = pd.DataFrame({{'a': [1]}})",
        "frame['a'].apply(per_row)",
        ON_STACK,
    ),
    "pandas_apply_of_a_partial": (
        "import functools\nimport pandas as pd\nrun_it = functools.partial(pd.Series(['.env']).apply, "
        "functools.partial(load_context, allow_secrets=True))",
        "run_it()",
        "library or kernel code",
    ),
    "helper_aliased_under_the_persons_name": (
        "summarize = rlm_run",
        "summarize('what the person meant to summarize')",
        DIRECT,
    ),
    "partial_of_rlm_run": (
        "import functools\ngo = functools.partial(rlm_run, 'start a run')",
        "go()",
        DIRECT,
    ),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_what_model_code_left_keeps_the_models_trust(served, name: str) -> None:
    _, kernel = served
    model, person, phrase = ATTACKS[name]
    shared_run(served, model)
    refused(kernel, person, phrase)


def test_display_hooks_of_a_model_object_are_refused(served) -> None:
    _, kernel = served
    shared_run(
        served,
        "log = []\nclass Card:\n    def _repr_html_(self):\n        try:\n"
        f"            return {READ}\n        except Exception as e:\n            log.append(str(e))\n"
        "            return '<b>card</b>'\ncard = Card()",
    )
    ex = kernel.execute("card", timeout=120)
    assert SECRET not in ex.all_text, str(ex)
    assert any(ON_STACK in entry for entry in probe(kernel, "log")), probe(kernel, "log")


def test_finalizers_cannot_be_left_by_model_code(served) -> None:
    """`__del__` would run when the person deletes the object: the policy refuses defining it (and weakref
    is not importable); the finalizer-like sibling that is available, an ExitStack callback, is refused
    when the person's cell closes the stack (the `partial_via_exitstack` attack)."""
    server, kernel = served
    server.reset()
    server.reply_with(
        Script(root=[repl(f"class Trap:\n    def __del__(self):\n        {READ}\ntrap = Trap()")])
    )
    ok(kernel, "%%rlm --shared --max-iterations 2 --max-no-code-turns 1\nDo it.")
    error = probe(kernel, "rlm_result.trajectory[0].error")
    assert "defining '__del__' is not allowed" in error, error
    assert probe(kernel, "'trap' in dir()") is False


def max_tokens_row(kernel) -> str:
    """The max_tokens line of `%rlm show` (the whole table holds the test server's port and other numbers)."""
    rows = ok(kernel, "%rlm show").all_text
    return next((line for line in rows.splitlines() if line.strip().startswith("max_tokens")), "")


def test_magic_through_a_model_function_is_refused(served) -> None:
    _, kernel = served
    ok(kernel, "def set_tokens():\n    %rlm set max_tokens=91")
    shared_run(served, "def tidy():\n    return set_tokens()")
    refused(kernel, "tidy()", ON_STACK)
    assert "91" not in max_tokens_row(kernel)
    ok(kernel, "set_tokens()")  # the person's own function keeps its power
    assert "91" in max_tokens_row(kernel)
    ok(kernel, "%rlm set max_tokens=")


def test_shadowed_builtins_are_removed_and_rebound_helpers_restored(served) -> None:
    _, kernel = served
    ok(kernel, "mine = 'person value'\ndef cleanup(x):\n    return x")
    text = shared_run(
        served,
        f"def len(x):\n    return {READ}\nload_context = lambda *a, **k: 'fake'\nmine = 'model value'\n"
        f"made_here = [1, 2, 3]\ndef cleanup(x):\n    return {READ}",
    )
    assert probe(kernel, "len('abc')") == 3
    ok(kernel, "load_context('plain text')")
    assert probe(kernel, "context") == "plain text"  # the real helper again
    bound = probe(kernel, "rlm_result.model_bound")
    assert bound == {
        "len": "shadowed a builtin: removed",
        "load_context": "replaced a helper: restored",
        "mine": "rebound your variable",
        "made_here": "new",
        "cleanup": "replaced your function or class",
    }, bound
    assert "model-written code bound in your namespace:" in text, text
    assert "len (shadowed a builtin: removed)" in text and "made_here" in text, text
    stdout = probe(kernel, "rlm_result.trajectory[0].stdout")
    assert "shadowed Python builtin" in stdout, stdout  # the model is told too
    assert probe(kernel, "sum(made_here)") == 6  # model code's plain results are the person's to use


def test_the_persons_own_code_keeps_its_privilege(served) -> None:
    _, kernel = served
    shared_run(served, "numbers = [4, 5]\nlabel = 'model made this'")
    ok(kernel, f"def from_an_earlier_cell():\n    return {READ}")
    for code in (
        READ,
        "load_context(\n    '.env',\n    allow_secrets=True,\n)",
        f"x = 'éé€'; y = {READ}",
        f"s = f'{{{READ.replace(chr(39), chr(34))}}}'",
        f"class Body:\n    v = {READ}",
        f"if True:\n    z = [{READ} for _ in 'a']",
        f"g = ({READ} for _ in 'a')\nnext(g)",
        "from_an_earlier_cell()",
        f"def mine():\n    return {READ}\nmine()",
        f"reader = lambda: {READ}\nreader()",
        f"[{READ} for _ in range(1)]",
        f"class Mine:\n    def __repr__(self):\n        return str({READ})\nrepr(Mine())",
    ):
        ex = kernel.execute(code, timeout=120)
        assert ex.ok and "secrets" not in (ex.error_value or ""), (code, str(ex))
        assert probe(kernel, "'OPENAI_API_KEY' in context"), code
        ok(kernel, "load_context('')")
    assert probe(kernel, "numbers + [len(label)]") == [4, 5, 15]


def test_the_persons_own_wrapper_is_refused_with_what_to_write(served) -> None:
    _, kernel = served
    text = refused(
        kernel, "import functools\nf = functools.partial(load_context, allow_secrets=True)\nf('.env')", DIRECT
    )
    assert "load_context(path, allow_secrets=True)" in text
    # an alias is refused too: model code could have bound the helper under a name the person calls
    refused(kernel, "lc = load_context\nlc('.env', allow_secrets=True)", "by its name")
    # a magic's body keeps no source to read: refused, saying so
    refused(kernel, f"%time {READ}", "cannot read the source")


def test_tools_the_person_passes_keep_working(served) -> None:
    _, kernel = served
    ok(kernel, "def lookup(key):\n    'Look a key up.'\n    return {'alpha': 41}.get(key, 0) + 1")
    text = shared_run(served, "print('tool says', lookup('alpha'))", flags="--tools lookup")
    stdout = probe(kernel, "rlm_result.trajectory[0].stdout")
    assert "tool says 42" in stdout, (stdout, text)
    assert probe(kernel, "lookup('alpha')") == 42


def test_functions_of_a_private_run_stay_untrusted_in_its_result(served) -> None:
    """Without --shared the run's namespace is its own, but `rlm_result.namespace` hands its functions to the
    person: they keep the model's trust there too."""
    server, kernel = served
    server.reset()
    server.reply_with(Script(root=[repl(f"def peek():\n    return {READ}\nsize = 7")]))
    ok(kernel, "%%rlm --max-iterations 2 --max-no-code-turns 1\nDo it.")
    assert probe(kernel, "rlm_result.model_bound") == {}  # nothing was bound in the notebook
    assert probe(kernel, "rlm_result.namespace['size']") == 7
    refused(kernel, "rlm_result.namespace['peek']()", ON_STACK)
