"""The trajectory viewer: a `%%rlm` run with a nested sub-RLM, executed by nbclient on the `rlm` kernel and
exported by nbconvert to static HTML; `rlm_kernel.view` on the saved .jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

import rlm_kernel
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl


def test_viewer_html_in_an_nbconvert_export_shows_the_nested_run(
    llm_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in llm_env(llm_server).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    llm_server.reply_with(
        Script(
            root=[
                repl("sub = rlm_query('Count the words: ' + context)\nprint(sub)"),
                repl("FINAL_VAR('sub')"),
            ],
            sub=[repl("n = len(context.split())\nprint(n)"), repl("FINAL(n)")],
        )
    )
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("load_context('alpha beta gamma delta')"),
            nbformat.v4.new_code_cell("%%rlm --max-depth 2\nHow many words?"),
            nbformat.v4.new_code_cell("rlm_result.to_jsonl('run.jsonl')\nrlm_result.save('run.ipynb')"),
        ],
        metadata={"kernelspec": {"name": "rlm", "display_name": "RLM", "language": "python"}},
    )
    NotebookClient(
        nb, timeout=120, kernel_name="rlm", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "<details" in body and "<script" not in body.split("rlmv", 1)[1].split("</div>", 1)[0]
    assert "Sub-RLM (depth 2" in body  # the nested run, inside the call that started it
    assert "Count the words: alpha beta gamma delta" in body  # the sub-RLM's full prompt
    assert "FINAL accepted" in body
    outputs = nb.cells[1].outputs
    assert any("text/plain" in o.get("data", {}) for o in outputs)  # the plain-text fallback is kept

    saved = tmp_path / "run.jsonl"
    head = json.loads(saved.read_text().splitlines()[0])
    assert head["termination"] == "final" and head["model"]
    turn = json.loads(saved.read_text().splitlines()[1])
    nested = turn["calls"][0]["run"]
    assert nested["run"]["depth"] == 2 and len(nested["turns"]) == 2 and nested["run"]["answer"] == "7"
    exported = nbformat.read(tmp_path / "run.ipynb", as_version=4)
    sources = [c.source for c in exported.cells]
    nested_at = next(i for i, src in enumerate(sources) if "Sub-RLM (depth 2" in src)
    assert sources[nested_at + 1] == "n = len(context.split())\nprint(n)"  # the nested run's own turns
    assert any("Sub-RLM answer" in src and "7" in src for src in sources[nested_at:])
    shown = rlm_kernel.view(str(saved))
    html = shown._repr_html_()
    assert "Sub-RLM (depth 2" in html and "Count the words: alpha beta gamma delta" in html
    assert "Sub-RLM" in repr(shown)
