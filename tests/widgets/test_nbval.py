"""Saved notebooks keep the outcome as text: run by nbclient, nbval passes only with the shipped sanitizer.

Uses the real `rlm` kernel (auto display → text: nbclient has no widget frontend) and the local server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import rlm_kernel.widgets as widgets
from tests.llm_server import LLMTestServer

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llm_server: LLMTestServer) -> dict[str, str]:
    (tmp_path / "none.toml").write_text("")
    values = {
        "RLM_PROVIDER": "openai",
        "RLM_BASE_URL": llm_server.openai_base_url,
        "RLM_API_KEY": "sk-test-not-a-key",
        "RLM_MODEL": "test-model",
        "RLM_CACHE": "off",
        "RLM_CONFIG": str(tmp_path / "none.toml"),
        "PYTHONWARNINGS": "ignore",
    }
    monkeypatch.delenv("RLM_DISPLAY", raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return {**os.environ, **values}


def run_nbval(path: Path, env: dict[str, str], sanitize: bool) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    cmd += ["--nbval", str(path)]
    if sanitize:
        cmd += ["--nbval-sanitize-with", widgets.SANITIZE_PATH]
    return subprocess.run(cmd, cwd=path.parent, env=env, capture_output=True, text=True, timeout=240)


def test_saved_notebook_shows_summary_and_nbval_passes_with_sanitizer(
    tmp_path: Path, kernel_env: dict[str, str]
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "rlm", "display_name": "rlm", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("answers = llm_query_batched(['alpha beta', 'gamma delta epsilon'])")
    ]
    client = NotebookClient(
        nb, timeout=120, kernel_name="rlm", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = nb.cells[0].outputs
    streams = [o for o in outputs if o.output_type == "stream"]
    assert [o.output_type for o in outputs] == ["stream"], outputs
    line = streams[0].text.strip()
    assert line.startswith(
        "fan-out (2 prompts, first: alpha beta): 2/2 done · 0 failed · 0 cached · 5 in / 5 out tokens · "
        "$0.0000 · took "
    )
    # pretend it was recorded on a slower day: only the timing differs from what a re-run produces
    streams[0].text = line.rsplit("took ", 1)[0] + "took 987.6 s\n"
    path = tmp_path / "recorded.ipynb"
    nbformat.write(nb, path)

    strict = run_nbval(path, kernel_env, sanitize=False)
    assert strict.returncode != 0, strict.stdout[-2000:]
    sanitized = run_nbval(path, kernel_env, sanitize=True)
    assert sanitized.returncode == 0, sanitized.stdout[-3000:] + sanitized.stderr[-2000:]
    assert "1 passed" in sanitized.stdout
