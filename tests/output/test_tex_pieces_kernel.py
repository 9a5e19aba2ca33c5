"""Issue 26, class 1 through a real kernel: TeX that defines or assembles commands
(tests/output/tex_families.py) reaches the frontend inert, from model-written code and from a person's cell.

A `%%rlm --shared` run's model code displays every family as Markdown, HTML, `text/latex` and through an
object's `_repr_latex_` / `_repr_markdown_` (which the person's next cell displays again); the person's own
cell displays every family as Markdown and LaTeX. What leaves the kernel: model output has no `text/latex`
and no run of text with a `$` or `\\` beside anything else (MathJax finds no math in it); the person's output
keeps only control words of ordinary math. Scripted runs against tests/llm_server.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from rlm_kernel.output import MODEL_LABEL, sanitise
from tests.kernel_client import Execution, KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.output.tex_families import ACTIVE, FAMILIES
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl

_TEX_SAFE: frozenset[str] = getattr(sanitise, "_TEX_SAFE", frozenset())  # the allowlist
_WORD = re.compile(r"\\(?:([A-Za-z]+)|[\s\S])")
_TAG = re.compile(r"""<(?:[^>"']|"[^"]*"|'[^']*')*>""")
PAYLOADS = list(FAMILIES.values())

MODEL_CODE = f"""P = {PAYLOADS!r}
for s in P:
    display({{'text/markdown': s}}, raw=True)
    display({{'text/html': '<p>' + s + '</p>'}}, raw=True)
    display({{'text/latex': s, 'text/plain': 'latex'}}, raw=True)
class Formula:
    def _repr_latex_(self):
        return P[0]
    def _repr_markdown_(self):
        return 'see ' + P[1]
formula = Formula()
display(formula)"""


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        yield served


def _bundles(ex: Execution) -> list[dict]:
    return [
        m["content"]["data"]
        for m in ex.messages
        if m["msg_type"] in ("display_data", "update_display_data", "execute_result")
        and not _kernel_view(str(m["content"]["data"].get("text/html", "")))
    ]


def _kernel_view(html: str) -> bool:
    """The kernel's own run view and viewer (their TeX is covered by tests/output/test_tex_pieces.py)."""
    return "<b>RLM run</b>" in html or html.startswith("<div class='rlmv'>")


def _live(text: str) -> set[str]:
    return {m.group(1) for m in _WORD.finditer(text) if m.group(1)}


def _assert_model_bundle_has_no_math(data: dict) -> None:
    assert "text/latex" not in data, data
    html = data.get("text/html", "")
    if "$" in html or "\\" in html:
        assert MODEL_LABEL.replace("'", "&#x27;") in html, data
    for run in _TAG.split(html):
        assert not re.search(r"[$\\]", run) or run in ("$", "\\"), (run, html)


def test_model_codes_tex_is_not_typeset(served) -> None:
    server, kernel = served
    server.reset()
    server.reply_with(Script(root=[repl(MODEL_CODE)]))
    ex = kernel.execute("%%rlm --shared --max-iterations 2 --max-no-code-turns 1\nShow it.", timeout=300)
    assert ex.ok, str(ex)
    assert "Turn 1: ok" in ex.all_text, ex.all_text[-3000:]
    shown = [d for d in _bundles(ex) if "text/html" in d or "text/latex" in d]
    assert len(shown) >= 3 * len(PAYLOADS) + 1, len(shown)
    for data in shown:
        _assert_model_bundle_has_no_math(data)
    again = kernel.execute("formula", timeout=60)  # the person shows the model's object later
    assert again.ok and again.result_data, str(again)
    _assert_model_bundle_has_no_math(again.result_data)


def test_a_persons_tex_keeps_only_ordinary_math(served) -> None:
    _, kernel = served
    code = f"""for s in {PAYLOADS!r}:
    display({{'text/markdown': s}}, raw=True)
    display({{'text/latex': s, 'text/plain': 'latex'}}, raw=True)
display({{'text/markdown': r'$\\frac{{1}}{{2}} + \\alpha$'}}, raw=True)"""
    ex = kernel.execute(code, timeout=120)
    assert ex.ok, str(ex)
    shown = _bundles(ex)
    assert len(shown) == 2 * len(PAYLOADS) + 1, len(shown)
    for data in shown:
        for mime in ("text/html", "text/latex"):
            live = _live(data.get(mime, ""))
            assert not (live & ACTIVE) and live <= _TEX_SAFE | {"begin", "end"}, (mime, sorted(live), data)
    assert r"$\frac{1}{2} + \alpha$" in shown[-1]["text/html"]  # honest math is typeset as before
