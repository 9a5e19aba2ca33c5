"""The tutorials run under papermill with the `rlm` kernel, parameters injected, as the README shows.

Replays the committed recordings (offline, like the nbval tests) with papermill's own command line; the
relative `RLM_CACHE_DIR` is taken from the notebook's directory (`--cwd notebooks`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))
from conftest import kernel_env  # noqa: E402


def _papermill(
    notebook: str, out: Path, *params: str, cwd: bool = True
) -> tuple[subprocess.CompletedProcess, dict]:
    """`papermill notebooks/NAME.ipynb OUT -k rlm --cwd notebooks -p ...` replaying NAME's recordings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_") and not k.endswith("_API_KEY")}
    env["XDG_CONFIG_HOME"] = str(out.parent / "no-user-config")  # no personal settings change the cache keys
    env.update(kernel_env(NOTEBOOKS / f"{notebook}.ipynb", "replay"))
    env["RLM_CACHE_DIR"] = f".rlm-cache/{notebook}"  # relative: the notebook's directory
    cmd = [
        sys.executable, "-m", "papermill", f"notebooks/{notebook}.ipynb", str(out),
        "-k", "rlm", *(["--cwd", "notebooks"] if cwd else []), *params,
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    executed = json.loads(out.read_text()) if out.exists() else {}
    return proc, executed


def _errors(nb: dict) -> list[str]:
    return [
        f"{o.get('ename')}: {o.get('evalue')}"
        for c in nb.get("cells", [])
        if c["cell_type"] == "code" and "raises-exception" not in c["metadata"].get("tags", [])
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


def _text(cell: dict) -> str:
    parts = []
    for o in cell.get("outputs", []):
        parts += o.get("text", []) if "text" in o else o.get("data", {}).get("text/plain", [])
    return "".join(parts)


@pytest.mark.timeout(600)
def test_map_reduce_tutorial_runs_with_a_budget_parameter(tmp_path: Path) -> None:
    """The issue's command: papermill notebooks/02-map-reduce.ipynb out.ipynb -p budget_usd 0.05."""
    proc, nb = _papermill("02-map-reduce", tmp_path / "out.ipynb", "-p", "budget_usd", "0.05")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not _errors(nb), _errors(nb)
    tags = [c["metadata"].get("tags", []) for c in nb["cells"] if c["cell_type"] == "code"]
    assert tags[0] == ["parameters"] and tags[1] == ["injected-parameters"], tags
    injected = "".join(
        next(c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", []))["source"]
    )
    assert "budget_usd = 0.05" in injected, injected
    assert nb["metadata"]["papermill"]["parameters"] == {"budget_usd": 0.05}
    assert nb["metadata"]["kernelspec"]["name"] == "rlm"
    summary = [
        _text(c) for c in nb["cells"] if c["cell_type"] == "code" and "map_reduce(" in "".join(c["source"])
    ]
    assert summary and "5 cached" in summary[0], summary  # answered from the recordings, found relatively


@pytest.mark.timeout(600)
def test_parameters_reach_the_kernel_settings(tmp_path: Path) -> None:
    """The budget parameter is a limit in force: the quickstart's closing `%rlm budget` shows it."""
    proc, nb = _papermill("01-quickstart", tmp_path / "out.ipynb", "-p", "budget_usd", "0.05")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not _errors(nb), _errors(nb)
    budget = [c for c in nb["cells"] if c["cell_type"] == "code" and "%rlm budget" in "".join(c["source"])]
    assert "$0.0000 of $0.0500" in _text(budget[-1]), _text(budget[-1])


@pytest.mark.timeout(600)
def test_without_cwd_the_error_says_where_it_looked_and_what_to_pass(tmp_path: Path) -> None:
    """Run from the repository root without --cwd, the kernel starts there: the corpus path is relative to it,
    and the error names the absolute path it tried and papermill's --cwd."""
    proc, nb = _papermill("01-quickstart", tmp_path / "out.ipynb", cwd=False)
    assert proc.returncode != 0
    errors = _errors(nb)
    assert len(errors) == 1 and errors[0].startswith("ContextError: no such file or directory"), errors
    assert f"looked for {ROOT / 'data' / 'python-reference'}" in errors[0], errors
    assert "papermill's --cwd" in errors[0], errors


@pytest.mark.timeout(600)
def test_a_corpus_parameter_that_names_nothing_fails_with_the_path(tmp_path: Path) -> None:
    proc, nb = _papermill("01-quickstart", tmp_path / "out.ipynb", "-p", "corpus", "data/no-such-corpus")
    assert proc.returncode != 0
    errors = _errors(nb)
    assert len(errors) == 1 and f"looked for {NOTEBOOKS / 'data' / 'no-such-corpus'}" in errors[0], errors
