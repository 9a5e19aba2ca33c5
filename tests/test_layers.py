"""The package's one-way layering (README, Development): import-linter's contract, and what is left."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import import_graph  # noqa: E402 - tools/ is not a package


def test_lint_imports_keeps_the_layer_contract() -> None:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.fail("lint-imports is missing: pip install -e '.[test]' (import-linter is a test dependency)")
    done = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "layers point down KEPT" in done.stdout


def test_the_graph_counts_function_level_imports_and_finds_a_cycle(tmp_path: Path) -> None:
    """The measuring tool itself: an import inside a function is an edge; a two-module loop is a cycle."""
    pkg = tmp_path / "rlm_kernel"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from rlm_kernel import b\n")
    (pkg / "b.py").write_text("def f():\n    from rlm_kernel.a import x\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rlm_kernel import a\n"
    )
    modules = {import_graph.module_name(p, tmp_path): p for p in pkg.rglob("*.py")}
    graph = {m: {t for t, _, _ in import_graph.imports_of(m, p, modules)} for m, p in modules.items()}
    assert graph["rlm_kernel.b"] == {"rlm_kernel.a"}
    assert graph["rlm_kernel.c"] == set()  # annotations only
    assert import_graph.sccs(graph) == [["rlm_kernel.a", "rlm_kernel.b"]]


def _graph() -> dict[str, set[str]]:
    modules = import_graph.all_modules()
    return {m: {t for t, _, _ in import_graph.imports_of(m, p, modules)} for m, p in modules.items()}


def test_the_llm_layer_never_imports_the_broker() -> None:
    """The broker process uses the LLM layer (its engine, budgets, config); the kernel's side of the broker
    (link, hand-over, protocol) lives in the LLM layer. No import of `rlm_kernel.broker` from
    `rlm_kernel.llm`, at module level or in a function, so the two packages form no cycle."""
    up = sorted(
        f"{m} -> {t}"
        for m, targets in _graph().items()
        if import_graph.group(m) == "rlm_kernel.llm"
        for t in targets
        if import_graph.group(t) == "rlm_kernel.broker"
    )
    assert up == [], up


def test_no_package_cycle() -> None:
    graph = _graph()
    packages: dict[str, set[str]] = {}
    for m, targets in graph.items():
        for t in targets:
            a, b = import_graph.group(m), import_graph.group(t)
            if a != b and not (m == a and t.startswith(m + ".")):
                packages.setdefault(a, set()).add(b)
    assert import_graph.sccs(packages) == []


def test_no_module_cycle() -> None:
    """No module cycle anywhere in rlm_kernel, function-level imports included."""
    assert import_graph.sccs(_graph()) == []


def test_the_sandbox_has_no_module_cycle() -> None:
    """Inside rlm_kernel.sandbox every import points one way, function-level imports included, so the package
    reads top-down: names/filenames/errors at the bottom, the transformer, guards and facades above them, the
    session, namespace and runner on top, and `sandbox/__init__` only re-exports (no module imports it)."""
    modules = import_graph.all_modules()
    sandbox = {m: p for m, p in modules.items() if m.startswith("rlm_kernel.sandbox")}
    graph = {
        m: {t for t, _, _ in import_graph.imports_of(m, p, modules) if t.startswith("rlm_kernel.sandbox")}
        for m, p in sandbox.items()
    }
    assert import_graph.sccs(graph) == []
    importers = sorted(m for m, targets in graph.items() if "rlm_kernel.sandbox" in targets)
    assert importers == [], f"these modules import the sandbox package's __init__: {importers}"
