"""The REPL helpers from a person's cells, through a real `rlm` kernel and the local LLM test server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_client import KernelHarness, kernel_with_llm_server, ok, probe
from tests.llm_server import Fault, LLMTestServer
from tests.repl.conftest import llm_env


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as (server, kernel):
        kernel.execute("import json", timeout=60)
        yield server, kernel


@pytest.fixture
def kernel(served: tuple[LLMTestServer, KernelHarness]) -> KernelHarness:
    served[0].reset()
    return served[1]


def test_load_directory_glob_and_summary(kernel: KernelHarness) -> None:
    root = Path(kernel.cwd) / "corpus"
    (root / "sub").mkdir(parents=True, exist_ok=True)
    (root / "a.py").write_text("def f():\n    return 1\n")
    (root / "sub" / "b.py").write_text("x = 2\n")
    (root / "notes.md").write_text("# Notes\n")
    ex = ok(kernel, "load_context('corpus')")
    assert "directory from corpus" in ex.result and "3 file(s)" in ex.result
    assert probe(kernel, "list(context_files)") == ["corpus/a.py", "corpus/notes.md", "corpus/sub/b.py"]
    assert (
        probe(kernel, "context[context_files['corpus/sub/b.py'][0]:context_files['corpus/sub/b.py'][1]]")
        == "x = 2\n"
    )
    assert probe(kernel, "ctx == context") is True
    ok(kernel, "load_context('corpus/**/*.py')")
    assert probe(kernel, "list(context_files)") == ["corpus/a.py", "corpus/sub/b.py"]
    summary = ok(kernel, "%context")
    assert "glob from corpus/**/*.py" in summary.result and "=== corpus/a.py ===" in summary.result
    assert "text/html" in summary.result_data
    ok(kernel, "%context corpus/notes.md")
    assert probe(kernel, "context") == "# Notes\n"


def test_refused_path_names_the_rule(kernel: KernelHarness) -> None:
    ex = kernel.execute("load_context('/etc/passwd')")
    assert ex.error_name == "ContextError"
    assert "outside the allowed roots" in ex.error_value and "RLM_CONTEXT_ROOTS" in ex.error_value
    ex = kernel.execute("%context /etc/host*")
    assert ex.error_name == "ContextError" and "outside the allowed roots" in ex.error_value


def test_helpers_from_cells(served, kernel: KernelHarness) -> None:
    served[0].reply_with(lambda rec: Fault.http(400) if "bad" in rec.last_user else "ok:" + rec.last_user)
    assert probe(kernel, "llm_query('hello')") == "ok:hello"
    assert probe(kernel, "llm_query_batched(['a', 'b'])") == ["ok:a", "ok:b"]
    code = (
        "try:\n    llm_query_batched(['a', 'bad', 'c'])\nexcept QueryBatchError as e:\n"
        "    print(json.dumps([e.results, sorted(e.errors)]))"
    )
    assert json.loads(ok(kernel, code).stdout.strip().splitlines()[-1]) == [["ok:a", None, "ok:c"], [1]]
    ex = kernel.execute("llm_query('bad')")
    assert ex.error_name == "QueryError" and "llm_query failed" in ex.error_value
    assert "sk-test-key" not in ex.all_text
    ok(kernel, "repl_set('total', 7)")
    assert probe(kernel, "[total, repl_get('total'), repl_get('nope', 0)]") == [7, 7, 0]
    shown = ok(kernel, "SHOW_VARS()").stdout
    assert "total" in shown and "int" in shown and "llm_query" not in shown and "display" not in shown


def test_final_in_a_cell_displays_and_stores(kernel: KernelHarness) -> None:
    ex = ok(kernel, "FINAL('Paris')")
    assert any("FINAL ANSWER" in d.get("text/html", "") and "Paris" in d["text/html"] for d in ex.display)
    assert probe(kernel, "final_answer") == "Paris"


def test_rebinding_is_repaired_before_next_cell(kernel: KernelHarness) -> None:
    ok(kernel, "load_context('the real context')")
    ok(kernel, "llm_query = lambda p: 'fake'\ncontext = 'replaced'\ndel FINAL_VAR")
    assert probe(kernel, "[context, llm_query('x') != 'fake', callable(FINAL_VAR)]") == [
        "the real context",
        True,
        True,
    ]


def test_docstrings_show_with_question_mark_and_completion(kernel: KernelHarness) -> None:
    reply = kernel.inspect("llm_query", detail_level=0)
    assert reply["found"], reply
    assert "llm_query(prompt, model=None, max_tokens=None, system=None)" in reply["data"]["text/plain"]
    matches = kernel.complete("llm_que")["matches"]
    assert "llm_query" in matches and "llm_query_batched" in matches


def test_helpers_lead_nowhere(kernel: KernelHarness) -> None:
    for expr in ("llm_query.__globals__", "llm_query.__closure__", "QueryBatchError.__subclasses__()"):
        ex = kernel.execute(expr)
        assert not ex.ok, expr


@pytest.mark.slow
def test_one_gigabyte_file_loads_without_a_second_copy(kernel: KernelHarness) -> None:
    size = 1 << 30
    path = Path(kernel.cwd) / "big.log"
    line = b"2026-11-29T20:00:00Z INFO request served in 12ms path=/api/items status=200\n"
    with open(path, "wb") as f:
        block = (line * (4 * 1024 * 1024 // len(line) + 1))[: 4 * 1024 * 1024]
        for _ in range(size // len(block)):
            f.write(block)
    pid = kernel.km.provisioner.process.pid

    def status(field: str) -> int:
        for row in Path(f"/proc/{pid}/status").read_text().splitlines():
            if row.startswith(field + ":"):
                return int(row.split()[1]) * 1024
        raise AssertionError(field)

    before = status("VmRSS")
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    t0 = time.monotonic()
    ok(kernel, "s = load_context('big.log')", timeout=300)
    seconds = time.monotonic() - t0
    peak = status("VmHWM") - before
    assert probe(kernel, "len(context)") == size
    assert peak <= 1.3 * size, f"peak grew by {peak / size:.2f}× the file size"
    print(f"1 GiB loaded in {seconds:.1f}s, peak RSS +{peak / size:.2f}× file size")
    path.unlink()
