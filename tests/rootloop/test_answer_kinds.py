"""Issue 27 item 4, the long-context AFTER run's wrong accepted answers (2026-12-06): an answer of the wrong
kind for the question is refused and the hint shows the right kind, drawn from the run's own context —
scripted roots against the real sandbox and client on the local test server."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.kinds import code_kind, defined_names, kind_problem
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop.driver import run_rlm
from rlm_kernel.rootloop.found import enclosing_classes
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

_BASE = """\
import abc


class Policy(abc.ABC):

    @abc.abstractmethod
    def header_fetch_parse(self, name, value):
        raise NotImplementedError


class Compat32(Policy):

    def header_fetch_parse(self, name, value):
        return value

    def fold(self, name, value):
        return name
"""


def _corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ctxmod.LoadedContext:
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")
    pkg = tmp_path / "mail"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""Mail."""\n\n\ndef message_from_string(s):\n    return s\n')
    (pkg / "_policybase.py").write_text(_BASE)
    (pkg / "utils.py").write_text("def quote(s):\n    return s\n\n\ndef unquote(s):\n    return s\n")
    return ctxmod.load(str(pkg))


def _run(server: LLMTestServer, script: Script, question: str, loaded: ctxmod.LoadedContext, **options):
    server.reply_with(script)
    options.setdefault("best_effort", False)
    return run_rlm(question, loaded, options=RunOptions(**options))


OVERRIDE = "Which class overrides the method `header_fetch_parse` of its base class `Policy`?"
SEARCH = (
    "hits = [line for line in context.splitlines() if 'header_fetch_parse' in line.lower()]\n"
    "print(len(hits)); print(hits[:10])"
)


def test_a_def_line_for_which_class_is_refused_and_the_class_is_offered(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # code/32K-override-2 on the coder model: the found hint offered the printed `def` line, and it was
    # accepted
    corpus = _corpus(tmp_path, monkeypatch)
    script = Script(
        root=[
            repl(SEARCH),
            repl("FINAL('def header_fetch_parse(self, name, value):')"),  # printed, but names no class
            repl("FINAL('Compat32')"),
        ]
    )
    result = _run(client_on_server, script, OVERRIDE, corpus, max_iterations=3)
    first, second = result.trajectory[0], result.trajectory[1]
    assert "def header_fetch_parse" in first.stdout
    assert "FINAL('def header_fetch_parse" not in first.feedback
    assert "class Policy(abc.ABC):\n  class Compat32(Policy):" in first.feedback
    assert "reply with just:\n```repl\nFINAL('Compat32')\n```" in first.feedback
    assert "rejected" in second.note and "names none that `context` defines" in second.note
    assert result.termination == "final" and result.answer == "Compat32" and result.iterations == 3


def test_the_class_kind_is_read_from_the_context_not_a_word_list() -> None:
    names = {"class": defined_names(_BASE, "class"), "def": defined_names(_BASE, "def")}
    assert names["class"] == {"Policy", "Compat32"}
    assert code_kind(OVERRIDE) == "class" and code_kind("Which method of `Compat32` folds names?") == "def"
    assert code_kind("Which file defines `Compat32`?") is None
    assert code_kind("What is the secret code?") is None
    assert kind_problem("def header_fetch_parse(self, name, value):", OVERRIDE, names.get) is not None
    for right in ("Compat32", "class Compat32(Policy):", "mail._policybase.Compat32"):
        assert kind_problem(right, OVERRIDE, names.get) is None
    assert kind_problem("fold", "Which method of `Compat32` folds names?", names.get) is None
    # a context that defines no class has no shape to check: anything may name one there
    assert kind_problem("the Heron team", "Which class meets on Fridays?", {"class": frozenset()}.get) is None


def test_enclosing_classes_walks_up_to_the_class_line_of_each_place() -> None:
    text = "=== a.py ===\n" + _BASE + "\n\ndef header_fetch_parse(x):\n    return x\n"
    line = "def header_fetch_parse(self, name, value):"
    assert enclosing_classes([line], text) == ["class Policy(abc.ABC):", "class Compat32(Policy):"]
    assert enclosing_classes(["def header_fetch_parse(x):"], text) == []  # top level: in no class
    assert enclosing_classes(["raise NotImplementedError"], text) == ["class Policy(abc.ABC):"]  # nested


def test_a_count_over_the_whole_corpus_is_refused_for_a_question_about_one_file(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # code/32K-count-1 on the coder model: len(extract_functions(context)) over all 8 files (43) was accepted
    # for "How many top-level functions does `email/_encoded_words.py` define?" (8)
    corpus = _corpus(tmp_path, monkeypatch)
    path = next(p for p in corpus.files if p.endswith("utils.py"))
    whole = "n = len([l for l in context.splitlines() if l.startswith('def ')])\nprint(n)"
    scoped = (
        f"start, end = context_files[{path!r}]\ntext = context[start:end]\n"
        "k = len([l for l in text.splitlines() if l.startswith('def ')])\nprint(k)"
    )
    script = Script(
        root=[
            repl(f"hits = [l for l in context.splitlines() if {path!r} in l]\nprint(len(hits))"),
            repl(whole),
            "FINAL(3)",  # printed by code over every file: refused
            repl("FINAL(n)"),  # computed over every file: refused
            repl(scoped),
            "FINAL(2)",
        ]
    )
    question = f"How many top-level functions does `{path}` define? Answer with a number."
    result = _run(client_on_server, script, question, corpus, max_iterations=6)
    assert [t.stdout.strip() for t in result.trajectory[:2]] == ["1", "3"]  # the marker line; every file
    notes = [t.note for t in result.trajectory]
    assert all(f"asks about the file {path!r}" in n for n in notes[2:4])
    assert f"start, end = context_files[{path!r}]" in notes[2]
    assert result.termination == "final" and result.answer == "2" and result.iterations == 6


def test_the_scope_follows_the_file_s_text_not_a_filter_that_mentions_it() -> None:
    from rlm_kernel.repl.scope import ScopeFlow, scope_file

    files = ["mail/utils.py", "mail/base.py", "other/base.py"]
    assert scope_file("How many functions does `mail/utils.py` define?", files) == "mail/utils.py"
    assert scope_file("How many functions does utils.py define?", files) == "mail/utils.py"
    assert scope_file("How many functions does base.py define?", files) is None  # two files of that name
    assert scope_file("How many files are there?", files) is None
    flow = ScopeFlow("mail/utils.py")
    assert not flow.block_scoped("hits = [l for l in context.splitlines() if 'mail/utils.py' in l]")
    flow.add_block("hits = [l for l in context.splitlines() if 'utils.py' in l]\nn = len(context)")
    assert not flow.names & {"hits", "n"}
    for code in (
        "s, e = context_files['mail/utils.py']\nt = context[s:e]\nk = t.count('def ')",
        "i = context.find('=== mail/utils.py ===')\nt = context[i:]\nk = len(t)",
        "k = 0\nfor line in context.splitlines():\n    if line == '=== mail/utils.py ===':\n        k += 1",
    ):
        one = ScopeFlow("mail/utils.py")
        one.add_block(code)
        assert "k" in one.names and one.block_scoped(code), code


def test_which_class_gets_the_classes_of_the_defining_lines_among_many_uses(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # hint follower, code/128K-override-2 (seed 1): the search printed nine hits, the `def` lines among calls
    # and docs, too many for the found hint, and no hint came
    _corpus(tmp_path, monkeypatch)
    uses = "".join(
        f"def get_{i}(policy, k, v):\n    return policy.header_fetch_parse(k, v)\n\n\n" for i in range(8)
    )
    (tmp_path / "mail" / "message.py").write_text(uses)
    corpus = ctxmod.load(str(tmp_path / "mail"))
    script = Script(root=[repl(SEARCH), repl("FINAL('Compat32')")])
    result = _run(client_on_server, script, OVERRIDE, corpus, max_iterations=2)
    first = result.trajectory[0]
    assert first.stdout.startswith("10\n")
    assert "class Policy(abc.ABC):\n  class Compat32(Policy):" in first.feedback
    assert "reply with just:\n```repl\nFINAL('Compat32')\n```" in first.feedback
    assert result.termination == "final" and result.answer == "Compat32" and result.iterations == 2


def test_a_text_s_length_is_not_a_count_of_what_the_question_asks(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # code/32K-count-1 on the coder model, after the file-scope refusal: it took the file's text, printed
    # len(text) (8541) and the found hint offered FINAL('8541'), which was accepted
    corpus = _corpus(tmp_path, monkeypatch)
    path = next(p for p in corpus.files if p.endswith("utils.py"))
    size = len(corpus.value[slice(*corpus.files[path])])
    scoped = f"start, end = context_files[{path!r}]\ntext = context[start:end]\nprint(len(text))"
    count = "k = len([l for l in text.splitlines() if l.startswith('def ')])\nprint(k)"
    script = Script(root=[repl(scoped), repl(f"FINAL({size})"), repl(count), "FINAL(2)"])
    question = f"How many top-level functions does `{path}` define? Answer with a number."
    result = _run(client_on_server, script, question, corpus, max_iterations=4)
    first = result.trajectory[0]
    assert first.stdout.strip() == str(size)
    assert f"FINAL('{size}')" not in first.feedback and "length of a text in characters" in first.feedback
    assert "length of a text in characters" in result.trajectory[1].note
    assert result.termination == "final" and result.answer == "2" and result.iterations == 4
    # a question about characters takes the length
    chars = f"How many characters does `{path}` have?"
    result = _run(
        client_on_server, Script(root=[repl(scoped), f"FINAL({size})"]), chars, corpus, max_iterations=2
    )
    assert result.termination == "final" and result.answer == str(size)


def test_a_search_that_cannot_match_is_re_run_fixed_in_the_same_turn(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # held-out long-context cases on the coder model (code/32K-where-4, multihop/32K-3hop-3, 2hop-4): told
    # that 'Compat32' in line.lower() can never match, then shown the fixed block to copy, it re-ran its own
    # block unchanged to the turn limit (8 turns) and guessed; now the loop runs the fixed block in that turn
    corpus = _corpus(tmp_path, monkeypatch)
    path = next(p for p in corpus.files if p.endswith("_policybase.py"))
    wrong = "hits = [line for line in context.splitlines() if 'Compat32' in line.lower()]\nprint(hits[:10])"
    script = Script(root=[repl(wrong), repl(wrong), repl(f"FINAL({path!r})")])
    result = _run(client_on_server, script, "Which file defines `Compat32`?", corpus, max_iterations=3)
    first, second = result.trajectory[0], result.trajectory[1]
    assert first.code == wrong  # what the model wrote, as it wrote it
    assert first.stdout.startswith("[]\n[your block re-run with 'compat32' in place of 'Compat32']\n")
    assert "class Compat32(Policy):" in first.stdout
    assert "The loop ran your block again with 'compat32'" in first.feedback
    assert "can never match: search for" not in first.feedback  # no block to copy: it was run
    assert "re-ran the block with 'compat32' for 'Compat32'" in first.note
    assert "class Compat32(Policy):" in second.stdout  # the model's repeat is re-run too
    assert result.termination == "final" and result.answer == path


def test_a_never_matching_search_is_not_re_run_when_it_called_a_model_or_found_something(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _corpus(tmp_path, monkeypatch)
    fixed = "hits = [line for line in context.splitlines() if 'compat32' in line.lower()]\nprint(hits[:10])"
    called = (
        "hits = [line for line in context.splitlines() if 'Compat32' in line.lower()]\n"
        "print(hits[:10]); print(llm_query('which file? ' + context[:200]))"
    )
    printed = (
        "hits = [line for line in context.splitlines() if 'Compat32' in line.lower()]\nprint(len(context))"
    )
    for code in (called, printed):
        script = Script(root=[repl(code)])
        result = _run(client_on_server, script, "Which file defines `Compat32`?", corpus, max_iterations=1)
        first = result.trajectory[0]
        assert "[your block re-run" not in first.stdout and "re-ran" not in first.note
        assert "can never match" in first.feedback
        if code is printed:
            block = fixed.replace("print(hits[:10])", "print(len(context))")
            assert f"Reply with the search fixed:\n```repl\n{block}\n```" in first.feedback
