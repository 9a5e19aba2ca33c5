"""Citations through the real kernel: a `%%rlm --cite` run over a mixed corpus executed by nbclient, its
citations in `rlm_result`, in the cell's provenance metadata and in the nbconvert export; a person's
`FINAL(answer, cite=...)` shown with its locations, and refused when a quote is not in the context."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from tests.corpora.make_files import make_corpus
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl

QUOTE = "The cobalt mine closed in 1921."


def test_a_cited_run_in_a_notebook(
    llm_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    for key, value in llm_env(llm_server).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    make_corpus(tmp_path / "docs")
    script = Script(root=[repl(f"n = context.count('cobalt')\nFINAL(str(n), cite=[{QUOTE!r}])")])
    llm_server.reply_with(script)
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("load_context('docs')"),
            nbformat.v4.new_code_cell("%%rlm --cite\nWhen did the cobalt mine close?"),
            nbformat.v4.new_code_cell("print(rlm_result.citations[0]['where'])"),
            nbformat.v4.new_code_cell(f"FINAL('1921', cite=[{QUOTE!r}])\nprint(final_citations[0]['page'])"),
            nbformat.v4.new_code_cell("FINAL('1899', cite=['The cobalt mine closed in 1899.'])"),
        ],
        metadata={"kernelspec": {"name": "rlm", "display_name": "RLM", "language": "python"}},
    )
    NotebookClient(
        nb, timeout=180, kernel_name="rlm", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    assert any("Cite your evidence" in p for p in script.root_prompts)
    printed = "".join(o.get("text", "") for o in nb.cells[2].outputs)
    assert printed.startswith("docs/report.pdf, page 2, line ")
    stamped = [o.get("metadata", {}).get("rlm", {}) for o in nb.cells[1].outputs]
    cites = [c for m in stamped for c in m.get("citations", [])]
    assert cites and cites[0]["page"] == 2 and cites[0]["quote"] == QUOTE  # provenance metadata
    person = nb.cells[3].outputs
    shown = "".join(str(o.get("data", {}).get("text/plain", "")) + o.get("text", "") for o in person)
    assert "docs/report.pdf, page 2" in shown and QUOTE in shown and "2\n" in shown
    refused = nb.cells[4].outputs
    assert any(
        o.get("output_type") == "error" and "could not be verified" in o.get("evalue", "") for o in refused
    )
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "rlm-citations" in body and "docs/report.pdf, page 2, line" in body
