"""Model-written code cannot change the kernel (issue 12, hole 7): a real kernel, scripted root replies.

In `%%rlm --shared` the root's code runs in the notebook's own namespace: it must still not reach a magic,
change a setting, start another root loop, or read secret files. The person's cells keep those powers, within
what was fixed at start (`%rlm set cache_dir=` stays under the start-time cache directory).
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

SECRET = "sk-model-code-canary-93ad1"

# Model-written blocks, each of which tries to change the kernel; every one must fail inside the run.
MODEL_PAYLOADS = [
    "helper = repl_get('rlm line magic')\nhelper('rlm', 'set model=evil-model')",
    "helper = repl_get('rlm cell magic')\nhelper('rlm', '--shared', 'again')",
    "load_context('.env', allow_secrets=True)",
    "rlm_run('start another root loop')",
    "for name in dir():\n    if 'magic' in name:\n        repl_get(name)('rlm', 'set model=evil-model')\n"
    "raise RuntimeError('no magic reachable')",
    "load_context('.env')",
    "load_context('.', kind='dir')\nprint('SECRET' + 'LEAK' if 'sk-model' in context else 'clean')",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        Path(served[1].cwd, ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
        Path(served[1].cwd, "notes.txt").write_text("ordinary notes\n")
        yield served


def ok(kernel: KernelHarness, code: str, timeout: float = 120):
    ex = kernel.execute(code, timeout=timeout)
    assert ex.ok, (code, str(ex))
    assert SECRET not in ex.all_text
    return ex


def probe(kernel: KernelHarness, expr: str) -> object:
    return json.loads(ok(kernel, f"import json\nprint(json.dumps({expr}))").stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("payload", MODEL_PAYLOADS)
def test_shared_root_code_cannot_change_the_kernel(served, payload: str) -> None:
    server, kernel = served
    server.reset()
    server.reply_with(Script(root=[repl(payload)]))
    ok(kernel, "keep = 'alive-7'")
    ok(kernel, "%%rlm --shared --max-iterations 2 --max-no-code-turns 1\nTry it.")
    error = probe(kernel, "rlm_result.trajectory[0].error")
    stdout = probe(kernel, "rlm_result.trajectory[0].stdout")
    assert error or "clean" in stdout, (payload, error, stdout)
    assert "LEAK" not in stdout and SECRET not in (error or "") + stdout
    show = ok(kernel, "%rlm show").all_text
    assert "evil-model" not in show, show
    assert probe(kernel, "keep") == "alive-7"


def test_model_code_refusals_say_why(served) -> None:
    server, kernel = served
    server.reset()
    server.reply_with(
        Script(root=[repl("load_context('notes.txt', allow_secrets=True)"), repl("rlm_run('q')")])
    )
    ok(kernel, "%%rlm --shared --max-iterations 3 --max-no-code-turns 1\nTry it.")
    errors = probe(kernel, "[t.error for t in rlm_result.trajectory[:2]]")
    for error in errors:
        assert "model-written code" in error, errors


def test_person_cells_keep_their_powers_within_the_start_roots(served) -> None:
    _, kernel = served
    ex = kernel.execute("%rlm set cache_dir=/tmp/rlm-elsewhere-cache")
    assert not ex.ok and "outside the places fixed at start" in ex.all_text, str(ex)
    ex = kernel.execute("%rlm set cache_dir=../../rlm-up-cache")
    assert not ex.ok, str(ex)
    ex = kernel.execute("%rlm set cache_dir=.rlm-cache/inner")  # inside a root: the kernel could write there
    assert not ex.ok and "outside the places fixed at start" in ex.all_text, str(ex)
    ok(kernel, "%rlm set cache_dir=@per-user")  # the start-time default
    ok(kernel, "%rlm set cache_dir=")
    ok(kernel, "%rlm set max_tokens=77")
    assert "77" in ok(kernel, "%rlm show").all_text
    ok(kernel, "%rlm set max_tokens=")
    ex = kernel.execute("load_context('.env', allow_secrets=True)")  # the person asked: shown on purpose
    assert ex.ok and SECRET in ex.all_text, str(ex)
