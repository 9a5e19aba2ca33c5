"""Evidence without `--cite` through the real kernel: `%%rlm` runs over a mixed corpus, executed by nbclient
against the local scripted test server, record the spans of `context` that the sub-calls (`llm_query`, an
item of `llm_query_batched`, a `map_reduce` part) were given and whose answers led to the accepted answer —
located at the right file, page and line, in `rlm_result.evidence`, the cell's provenance metadata, the
trajectory viewer and an nbconvert export — and none when the sub-calls saw no context."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from tests.corpora.make_files import make_corpus
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl

pytestmark = pytest.mark.timeout(300)

MINE = "The cobalt mine closed in 1921."
SAFFRON = "The river barge carried twelve crates of saffron."

ONE_CALL = """i = context.find('cobalt mine closed')
part = context[max(i - 300, 0):i + 300]
a = llm_query('When did the mine close? Read this:\\n' + part)
FINAL(a)"""
BATCH = """parts = [context[s:e] for s, e in context_files.values()]
answers = llm_query_batched(['Summarise this file:\\n' + p for p in parts])
hits = [a for a in answers if 'saffron' in a]
FINAL(hits[0])"""
MAP = """r = map_reduce(context, 'When did the mine close? Say so if this part tells: {chunk}',
               'Combine these notes: {results}', n_chunks=4)
FINAL(r)"""
BLIND = """n = context.count('cobalt')
hello = llm_query('Say hello to the reader')
FINAL(n)"""


def _child(rec) -> str:  # noqa: ANN001 - a RecordedRequest
    text = rec.last_user
    if text.startswith("Combine these notes"):
        return "The mine closed in 1921." if "1921" in text else "No closing date."
    if MINE in text:
        return "It closed in 1921."
    if "saffron" in text:
        return "The barge carried twelve crates of saffron."
    if "hello" in text:
        return "Hello, reader!"
    return "Nothing about that here."


def _probe(cell: object) -> object:
    return json.loads("".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout"))


def test_evidence_without_cite_in_a_notebook(
    llm_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in llm_env(llm_server).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    make_corpus(tmp_path / "docs")
    script = Script(root=[repl(ONE_CALL), repl(BATCH), repl(MAP), repl(BLIND)], child=_child)
    llm_server.reply_with(script)
    where = (
        "import json\ne = rlm_result.evidence\n"
        "print(json.dumps({'evidence': e, 'citations': rlm_result.citations, 'kind': rlm_result.answer_kind,"
        f" 'mine': locate({MINE!r}), 'saffron': locate({SAFFRON!r}), 'order': list(context_files),"
        " 'answer_md': rlm_result.to_notebook()['cells'][-1]['source']}))"
    )
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("load_context('docs')"),
            nbformat.v4.new_code_cell("%%rlm\nWhen did the cobalt mine close?"),
            nbformat.v4.new_code_cell(where),
            nbformat.v4.new_code_cell("%%rlm\nWhat did the river barge carry?"),
            nbformat.v4.new_code_cell(where),
            nbformat.v4.new_code_cell("%%rlm\nWhen did the cobalt mine close down?"),
            nbformat.v4.new_code_cell(where),
            nbformat.v4.new_code_cell("%%rlm\nHow many times does the word cobalt occur?"),
            nbformat.v4.new_code_cell(where),
        ],
        metadata={"kernelspec": {"name": "rlm", "display_name": "RLM", "language": "python"}},
    )
    NotebookClient(
        nb, timeout=240, kernel_name="rlm", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for c in nb.cells for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors

    # one llm_query over a slice around the fact: that slice, in report.pdf on page 2
    one = _probe(nb.cells[2])
    assert one["kind"] == "final" and one["citations"] == []
    [seen] = one["evidence"]
    mine = one["mine"]
    assert seen["path"] == "docs/report.pdf" and seen["by"] == "sub-call"
    assert seen["page"] <= mine["page"] == 2 <= seen.get("end_page", seen["page"])
    assert seen["line"] <= mine["line"] <= seen["end_line"]
    assert seen["span"][0] <= mine["offset"] < mine["end"] <= seen["span"][1]
    assert seen["call"] == "llm_query" and seen["turn"] == 1 and seen["excerpt"] == MINE
    assert seen["response"] == "It closed in 1921."
    assert seen["where"].startswith("docs/report.pdf, pages 1-2, lines 1-")  # the slice began on page 1
    stamped = [o.get("metadata", {}).get("rlm", {}) for o in nb.cells[1].outputs]
    recorded = [e for m in stamped for e in m.get("evidence", [])]
    assert recorded and recorded[0]["span"] == seen["span"]  # provenance metadata
    assert not [c for m in stamped for c in m.get("citations", [])]
    shown = "".join(o.get("data", {}).get("text/html", "") for o in nb.cells[1].outputs)
    assert "rlm-evidence" in shown and "seen by the sub-call, not quoted as proof" in shown
    assert "docs/report.pdf, pages 1-2, lines 1-" in shown and "rlm-citations" not in shown
    assert "Evidence (seen by the sub-call" in one["answer_md"] and "docs/report.pdf" in one["answer_md"]

    # a batch of one prompt per file: only the item whose answer holds the answer's words, the docx
    batch = _probe(nb.cells[4])
    [seen] = batch["evidence"]
    saffron = batch["saffron"]
    assert seen["path"] == "docs/memo.docx" and seen["call"] == "llm_query_batched"
    assert seen["line"] <= saffron["line"] <= seen["end_line"] and seen["excerpt"] == SAFFRON
    assert seen["item"] == batch["order"].index("docs/memo.docx") + 1  # its prompt's place in the batch

    # map_reduce: the part that told, not the reduce step (its prompt held only the parts' answers)
    mapped = _probe(nb.cells[6])
    assert mapped["evidence"], mapped
    assert all(e["call"] == "map_reduce" for e in mapped["evidence"])
    assert any(e["span"][0] <= mapped["mine"]["offset"] < e["span"][1] for e in mapped["evidence"]), (
        json.dumps(mapped["evidence"])
    )
    assert all(e["path"] for e in mapped["evidence"])

    # the sub-call saw no context: no evidence, and the viewer shows none
    blind = _probe(nb.cells[8])
    assert blind["kind"] == "final" and blind["evidence"] == []
    assert "rlm-evidence" not in "".join(o.get("data", {}).get("text/html", "") for o in nb.cells[7].outputs)

    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "rlm-evidence" in body and "seen by the sub-call, not quoted as proof" in body
    assert "docs/report.pdf, pages 1-2, lines 1-" in body and "docs/memo.docx" in body


BIG = """step = len(context) // 300
parts = [context[i * step:(i + 1) * step] for i in range(300)]
answers = llm_query_batched(['When was the lease signed? Answer from this part only:\\n' + p for p in parts])
told = [a for a in answers if '1887' in a]
FINAL(told[0])"""


def test_evidence_on_a_ten_mb_context_with_three_hundred_calls(
    llm_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.bench_evidence import FACT, write_corpus

    for key, value in llm_env(llm_server).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    write_corpus(tmp_path / "big", 10)

    def child(rec) -> str:  # noqa: ANN001 - a RecordedRequest
        return "It was signed on 14 March 1887." if FACT in rec.last_user else "This part does not tell."

    llm_server.reply_with(Script(root=[repl(BIG)], child=child))
    probe = (
        "import json\n"
        "print(json.dumps({'evidence': rlm_result.evidence, 'kind': rlm_result.answer_kind, "
        f"'fact': locate({FACT!r})}}))"
    )
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("s = load_context('big')"),
            nbformat.v4.new_code_cell("%%rlm\nWhen was the lease signed?"),
            nbformat.v4.new_code_cell(probe),
        ],
        metadata={"kernelspec": {"name": "rlm", "display_name": "RLM", "language": "python"}},
    )
    NotebookClient(
        nb, timeout=240, kernel_name="rlm", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for c in nb.cells for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    got = _probe(nb.cells[2])
    assert got["kind"] == "final"
    [seen] = got["evidence"]
    fact = got["fact"]
    assert seen["path"] == fact["path"] == "big/part050.txt" and seen["call"] == "llm_query_batched"
    assert seen["line"] <= fact["line"] <= seen["end_line"] and seen["excerpt"] == FACT
    assert seen["span"][0] <= fact["offset"] < fact["end"] <= seen["span"][1]
