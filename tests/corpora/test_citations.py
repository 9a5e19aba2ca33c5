"""Citations that are checked: FINAL(answer, cite=[...]) and answer["cite"] in scripted root-loop runs over a
real mixed corpus (the real sandbox, the real client on the local test server), accepted with their
locations, rejected once with feedback, shown by the viewer, in the notebook export and in --cite's
prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel.repl import citations
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.cell_magics import parse_rlm_line
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop import prompt_control
from rlm_kernel.rootloop.driver import run_rlm
from rlm_kernel.rootloop.viewer import tree_html, tree_text
from tests.corpora.make_files import make_corpus
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

QUOTE = "The cobalt mine closed in 1921."
COUNT = "n = context.count('cobalt')\n"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ctxmod.LoadedContext:
    make_corpus(tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", str(tmp_path))
    return ctxmod.load("docs")


def run(server: LLMTestServer, loaded: ctxmod.LoadedContext, script: Script, **options: object):
    server.reply_with(script)
    options.setdefault("best_effort", False)
    return run_rlm("When did the cobalt mine close?", loaded, options=RunOptions(**options))


def test_a_verified_quote_is_accepted_with_its_location(client_on_server, corpus) -> None:
    script = Script(root=[repl(COUNT + f"FINAL(str(n), cite=[{QUOTE!r}])")])
    result = run(client_on_server, corpus, script)
    assert result.termination == "final" and result.answer == "1"
    [cite] = result.citations
    assert cite["path"] == "docs/report.pdf" and cite["page"] == 2 and cite["quote"] == QUOTE
    start, end = cite["span"]
    assert " ".join(corpus.value[start:end].split()) == QUOTE
    assert cite["where"].startswith("docs/report.pdf, page 2, line ")


def test_whitespace_differences_and_spans_verify(client_on_server, corpus) -> None:
    start = corpus.value.index("Pears ripen")
    spaced = "The   cobalt mine\n closed in 1921."
    script = Script(root=[repl(COUNT + f"FINAL(str(n), cite=[{spaced!r}, ({start}, {start + 22})])")])
    result = run(client_on_server, corpus, script)
    assert [c["quote"] for c in result.citations] == [QUOTE, "Pears ripen in week 38"]
    assert result.citations[1]["message"] == 2 and result.citations[1]["path"] == "docs/inbox.mbox"


def test_an_unverifiable_citation_is_fed_back_once(client_on_server, corpus) -> None:
    script = Script(
        root=[
            repl(COUNT + "FINAL(str(n), cite=['The cobalt mine closed in 1899.'])"),
            repl(COUNT + f"FINAL(str(n), cite=[{QUOTE!r}, 'a quote made up twice'])"),
        ]
    )
    result = run(client_on_server, corpus, script)
    first = result.trajectory[0]
    assert "could not be verified" in first.note and "does not occur in context" in first.feedback
    assert "1899" in first.feedback
    # told once: the second answer is accepted with its verified citation only
    assert result.termination == "final" and result.iterations == 2
    assert [c["quote"] for c in result.citations] == [QUOTE]
    assert all("made up" not in c["quote"] for c in result.citations)


def test_the_answer_dict_cites_too(client_on_server, corpus) -> None:
    script = Script(
        root=[
            repl(
                COUNT
                + "answer['content'] = str(n)\nanswer['cite'] = ['nowhere in it']\nanswer['ready'] = True"
            ),
            repl(COUNT + f"answer['content'] = str(n)\nanswer['cite'] = [{QUOTE!r}]\nanswer['ready'] = True"),
        ]
    )
    result = run(client_on_server, corpus, script)
    assert 'answer["ready"] = True rejected' in result.trajectory[0].note
    assert result.termination == "final" and result.citations[0]["page"] == 2


def test_the_viewer_and_the_export_show_each_quote_with_file_page_and_line(client_on_server, corpus) -> None:
    script = Script(root=[repl(COUNT + f"FINAL(str(n), cite=[{QUOTE!r}])")])
    result = run(client_on_server, corpus, script)
    where = result.citations[0]["where"]
    html = tree_html(result.tree())
    assert "rlm-citations" in html and where in html and "cobalt mine closed in 1921" in html
    assert where in tree_text(result.tree())
    assert result.records()[0]["citations"][0]["page"] == 2
    cells = result.to_notebook()["cells"]
    assert where in cells[-1]["source"] and QUOTE in cells[-1]["source"]


def test_a_quote_in_the_corpus_cannot_inject_markup_into_the_viewer(client_on_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", str(tmp_path))
    (tmp_path / "evil.txt").write_text("see <img src=x onerror=alert(1)> here\n")
    loaded = ctxmod.load("evil.txt")
    script = Script(
        root=[repl("n = context.count('img')\nFINAL(str(n), cite=['<img src=x onerror=alert(1)>'])")]
    )
    result = run(client_on_server, loaded, script)
    html = tree_html(result.tree())
    assert "<img" not in html and "&lt;img src=x" in html


def test_cite_flag_asks_the_root_for_citations(client_on_server, corpus) -> None:
    assert parse_rlm_line("--cite --max-iterations 3") == {"max_iterations": 3, "cite": True}
    assert citations.PROMPT in prompt_control.build(RunOptions(cite=True), 128_000, 1024)
    assert citations.PROMPT not in prompt_control.build(RunOptions(), 128_000, 1024)
    script = Script(root=[repl(COUNT + f"FINAL(str(n), cite=[{QUOTE!r}])")])
    client_on_server.reply_with(script)
    run_rlm("When?", corpus, options=RunOptions(cite=True, best_effort=False))
    system = [r for r in client_on_server.requests if "Cite your evidence" in r.prompt]
    assert system, "the root's request under --cite carries the citation instructions"


def test_check_refuses_bad_citation_shapes() -> None:
    loaded = ctxmod.LoadedContext("alpha beta gamma", "text", "a string")
    assert citations.check(["beta"], loaded).accepted[0]["span"] == [6, 10]
    out = citations.check([3.5, (5, 2), "", "x" * 3000], loaded)
    assert len(out.rejected) == 4 and not out.accepted
    assert "neither a quote" in out.rejected[0] and "not inside context" in out.rejected[1]
    assert citations.check(list(range(60)), loaded).rejected[0].startswith("cite= takes at most")


def test_map_reduce_parts_carry_their_location(client_on_server, corpus) -> None:
    from rlm_kernel.analysis.map_reduce import map_reduce
    from rlm_kernel.repl import located

    client_on_server.reply_with(lambda rec: "ok")
    located.call(
        "map_reduce",
        map_reduce,
        (corpus.value, "Summarise: {chunk}", "Join: {results}"),
        {"n_chunks": 3},
        True,
        corpus,
    )
    maps = [r.prompt for r in client_on_server.requests if "Summarise:" in r.prompt]
    assert len(maps) == 3 and all("[from docs/" in p for p in maps)
    first = next(p for p in maps if "=== docs/book.epub ===" in p)
    assert "[from docs/book.epub, chapter 1, line 1, to docs/" in first  # runs on into later files


def test_under_cite_an_answer_without_citations_is_sent_back_once(client_on_server, corpus) -> None:
    script = Script(
        root=[
            repl(COUNT + "FINAL(str(n))"),
            repl(COUNT + f"FINAL(str(n), cite=[{QUOTE!r}])"),
        ]
    )
    result = run(client_on_server, corpus, script, cite=True)
    assert "asks for citations (--cite)" in result.trajectory[0].feedback
    assert result.iterations == 2 and result.citations[0]["page"] == 2
    # told once: then an answer without citations is accepted
    script = Script(root=[repl(COUNT + "FINAL(str(n))"), repl(COUNT + "FINAL(str(n))")])
    result = run(client_on_server, corpus, script, cite=True)
    assert result.termination == "final" and result.iterations == 2 and result.citations == []
    # without --cite nothing is asked
    result = run(client_on_server, corpus, Script(root=[repl(COUNT + "FINAL(str(n))")]))
    assert result.iterations == 1


FIND_LINE = (
    "i = context.find('cobalt mine closed')\n"
    "line = context[context.rfind(chr(10), 0, i) + 1 : context.find(chr(10), i)]\n"
    "ans = 'The mine closed in ' + line.split()[-1].rstrip('.')\n"
)


def test_under_cite_the_kernel_cites_the_printed_line_an_answer_came_from(client_on_server, corpus) -> None:
    """A small model seldom writes cite=[...]; the line its code printed is the evidence. Under --cite, an
    answer without citations whose own words a printed line of the context holds is accepted at once with
    that line as a verified citation, marked as found by the kernel (shown so in the viewer's text)."""
    script = Script(root=[repl(FIND_LINE + "print(line)\nFINAL(ans)")])
    result = run(client_on_server, corpus, script, cite=True)
    assert result.termination == "final" and result.iterations == 1, result.trajectory[0].feedback
    [cite] = result.citations
    assert cite["by"] == "kernel" and cite["quote"] == QUOTE and cite["page"] == 2
    assert citations.FOUND_NOTE in citations.render_text(result.citations)
    assert citations.FOUND_NOTE in citations.render_html(result.citations)


def test_the_kernel_cites_only_what_the_context_holds_and_backs_the_answer(client_on_server, corpus) -> None:
    """Printed text the context does not hold, or a count (one line does not back it), gives no citation:
    the root is asked for one as before."""
    made_up = FIND_LINE + "print('report: the mine closed in 1921, as checked')\nFINAL(ans)"
    for block in (made_up, FIND_LINE + "print(line)\nprint(len(line))\nFINAL(str(len(line)))"):
        script = Script(root=[repl(block), repl(block)])
        result = run(client_on_server, corpus, script, cite=True)
        assert "asks for citations (--cite)" in result.trajectory[0].feedback, block
        assert result.citations == [], block


def test_a_best_effort_answer_under_cite_shows_the_lines_that_back_it(client_on_server, corpus) -> None:
    """A run that ends without an accepted answer gives its best effort; under --cite it comes with the
    printed lines of the context that back it (found by the kernel), so the person can check it."""
    script = Script(root=[repl(FIND_LINE + "print(line)"), "The mine closed in 1921."])
    result = run(client_on_server, corpus, script, cite=True, max_iterations=1, best_effort=True)
    assert result.answer_kind == "best_effort", result.termination
    [cite] = result.citations
    assert cite["by"] == "kernel" and cite["quote"] == QUOTE
