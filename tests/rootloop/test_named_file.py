"""Issue 27, tutorial 5 with the plain question: a search with many hits over a corpus one of whose files is
named after the searched word gets the block that asks a sub-model the question with that file's text —
scripted roots against the real sandbox and client on the local test server."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop.driver import run_rlm
from rlm_kernel.rootloop.named_file import named_file, names_a_file
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

QUESTION = "Which exception does a bare `raise` (no expression) raise when no exception is being handled?"
SEARCH = (
    "hits = [line for line in context.splitlines() if 'raise' in line.lower()]\n"
    "print(len(hits)); print(hits[:10])"
)
RAISE = (
    "The raise statement\n\nIf no expressions are present, raise re-raises the exception that is currently "
    'being handled.\nIf there is no active exception, a "RuntimeError" exception is raised.\n'
)


def _corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raise_text: str = RAISE) -> ctxmod.LoadedContext:
    monkeypatch.setenv("RLM_CONTEXT_ROOTS", f"={tmp_path}")
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "raise.txt").write_text(raise_text)
    (ref / "assert.txt").write_text("".join(f"assert line {i}: may raise AssertionError\n" for i in range(6)))
    (ref / "try.txt").write_text("".join(f"try line {i}: an except clause; raise again\n" for i in range(6)))
    return ctxmod.load(str(ref))


def _run(server: LLMTestServer, script: Script, loaded: ctxmod.LoadedContext, **options):
    server.reply_with(script)
    options.setdefault("best_effort", False)
    return run_rlm(QUESTION, loaded, options=RunOptions(**options))


def _block(path: str, text: str = "context[start:end]") -> str:
    ask = QUESTION + "\n\nAnswer from this text:\n"
    return f"start, end = context_files[{path!r}]\nreply = llm_query({ask!r} + {text})\nprint(reply)"


def test_many_hits_get_the_file_named_after_the_word_to_read_with_a_sub_model(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _corpus(tmp_path, monkeypatch)
    path = next(p for p in corpus.files if p.endswith("raise.txt"))
    asked: list[str] = []

    def child(rec) -> str:  # noqa: ANN001 - a RecordedRequest
        asked.append(rec.last_user)
        return "RuntimeError"

    script = Script(root=[repl(SEARCH), repl(_block(path)), repl("FINAL(reply)")], child=child)
    result = _run(client_on_server, script, corpus, max_iterations=3)
    first = result.trajectory[0]
    assert int(first.stdout.split()[0]) >= 5
    assert f"The file {path!r} is named after 'raise'" in first.feedback
    assert f"reply with:\n```repl\n{_block(path)}\n```" in first.feedback
    assert asked and 'a "RuntimeError" exception is raised' in asked[0]  # the sub-model got the file's text
    assert "is named after" not in result.trajectory[1].feedback  # read: not offered again
    assert result.termination == "final" and result.answer == "RuntimeError"


def test_a_file_longer_than_one_call_reads_is_offered_in_its_first_part(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = RAISE + "filler text\n" * 40_000  # past what one call reads in the default window
    corpus = _corpus(tmp_path, monkeypatch, long)
    path = next(p for p in corpus.files if p.endswith("raise.txt"))
    result = _run(client_on_server, Script(root=[repl(SEARCH)]), corpus, max_iterations=1)
    feedback = result.trajectory[0].feedback
    assert "(its first part: the file is longer than one call reads)" in feedback
    assert "context[start:start + " in feedback and _block(path) not in feedback


def test_no_file_named_after_the_word_or_few_hits_get_no_file_hint(
    client_on_server: LLMTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _corpus(tmp_path, monkeypatch)
    other = SEARCH.replace("'raise'", "'exception'")  # many hits would need a file named exception.*
    few = SEARCH.replace("'raise'", "'handled'")  # one hit, in raise.txt: not many
    for code in (other, few):
        result = _run(client_on_server, Script(root=[repl(code)]), corpus, max_iterations=1)
        assert "is named after" not in result.trajectory[0].feedback, code


def test_the_named_file_is_the_one_whose_name_is_the_word() -> None:
    files = ["d/raise.txt", "d/raise-from.txt", "d/assert.txt", "d/try-except.txt", "d/except-star.txt"]
    assert named_file(files, ["raise"]) == ("d/raise.txt", "raise")  # the exact name wins over a part
    assert named_file(files, ["bare", "assert"]) == ("d/assert.txt", "assert")
    assert named_file(files, ["from"]) == ("d/raise-from.txt", "from")  # a part of one name
    assert named_file(files, ["except"]) is None  # a part of two names: no single file
    assert named_file(files, ["yield"]) is None


def test_a_question_that_names_a_file_gets_no_other_file() -> None:
    # hint follower, code/32K-default-3: 'charset' was pointed at email/charset.py, the question names another
    files = ["email/charset.py", "email/_encoded_words.py"]
    assert names_a_file("What is the default of `charset` of `encode` in `email/_encoded_words.py`?", files)
    assert names_a_file("What does _encoded_words.py define?", files)
    assert not names_a_file("Which charset does the package use by default?", files)
