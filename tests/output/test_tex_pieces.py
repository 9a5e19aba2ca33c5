"""Issue 26, class 1: TeX that defines or assembles commands is inert in every output (in-process).

`tests/output/tex_families.py` holds the families. Through every path a cell's TeX reaches the browser — HTML,
Markdown, `text/latex`, the kernel's own HTML that embeds model text — no control word is left that MathJax
would run other than ordinary math; output of model-written code has no math at all for a frontend to typeset
(each `$` and `\\` alone in an element) and no `text/latex`. The `browser` tests run JupyterLab's MathJax
itself (tests/browser/mathjax_probe.mjs, Node) over what leaves the kernel and check what it would draw:
`bash .ci/browser -k tex_pieces` (or, with tests/browser's npm packages installed,
`python -m pytest -m browser tests/output/test_tex_pieces.py`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rlm_kernel.output import clean_bundle, label_model_output, mark, sanitise
from rlm_kernel.output.sanitise import clean_html, markdown_html, neutralise_tex
from tests.output.tex_families import ACTIVE, FAMILIES, HONEST, STYLED_BEFORE

_TEX_SAFE: frozenset[str] = getattr(sanitise, "_TEX_SAFE", frozenset())  # the allowlist
PROBE = Path(__file__).resolve().parent.parent / "browser" / "mathjax_probe.mjs"
_WORD = re.compile(r"\\(?:([A-Za-z]+)|[\s\S])")
_TAG = re.compile(r"""<(?:[^>"']|"[^"]*"|'[^']*')*>""")


def _live_words(text: str) -> set[str]:
    """The control words MathJax would read as commands in `text` (a zero-width space after the backslash
    makes a control symbol instead)."""
    return {m.group(1) for m in _WORD.finditer(text) if m.group(1)}


def _paths(payload: str) -> dict[str, str]:
    """What leaves the kernel for `payload` by each way a cell can show TeX."""
    kernel_html = "<div><b>RLM run</b>: " + payload.replace("<", "&lt;") + "</div>"
    return {
        "html": clean_bundle({"text/html": f"<p>{payload}</p>"})[0]["text/html"],
        "markdown": clean_bundle({"text/markdown": f"answer: {payload}"})[0]["text/html"],
        "latex": clean_bundle({"text/latex": payload, "text/plain": "t"})[0]["text/latex"],
        "kernel_view": clean_bundle({"text/html": kernel_html}, mark({}))[0]["text/html"],
    }


def test_the_allowlist_holds_nothing_active() -> None:
    assert not (_TEX_SAFE & ACTIVE), sorted(_TEX_SAFE & ACTIVE)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_no_family_leaves_a_command_mathjax_would_run(name: str) -> None:
    for path, out in _paths(FAMILIES[name]).items():
        live = _live_words(out)
        assert not (live & ACTIVE), (path, sorted(live & ACTIVE), out)
        assert live <= _TEX_SAFE | {"begin", "end"}, (path, sorted(live - _TEX_SAFE), out)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_model_output_has_no_math_to_typeset(name: str) -> None:
    """Output of model-written code shows its TeX as written: no run of text holds a `$` or `\\` with
    anything else, and there is no `text/latex` a frontend could typeset instead of the frame."""
    payload = FAMILIES[name]
    for bundle in ({"text/html": f"<p>{payload}</p>"}, {"text/markdown": payload}, {"text/latex": payload}):
        cleaned, _ = clean_bundle(bundle)
        out = label_model_output(cleaned)
        assert "text/latex" not in out, out
        for run in _TAG.split(out["text/html"]):
            assert not re.search(r"[$\\]", run) or run in ("$", "\\"), (run, out["text/html"])


def test_honest_math_is_kept_for_a_persons_output() -> None:
    for source in HONEST:
        assert neutralise_tex(source) == source, source
        assert source.replace("&", "&amp;") in clean_html(f"<p>{source}</p>"), source


def test_code_in_the_kernels_own_pre_keeps_its_backslashes() -> None:
    """The run view shows model code in `<pre>` (MathJax never typesets there): `\\n` must stay `\\n`."""
    view = "<pre style='x'>print('a\\nb')</pre><div>\\newcommand{\\x}{y}</div>"
    out = clean_bundle({"text/html": view}, mark({}))[0]["text/html"]
    assert "print('a\\nb')" in out and "\\\u200bnewcommand" in out
    # a <pre> with a tag inside is neutralised (an unclosed <pre> ended by </div> shelters nothing after it)
    for view in ("<div><pre>x</div>$\\fcolorbox{g}{w}{F}$", "<pre><b>$\\fcolorbox{g}{w}{F}$</b></pre>"):
        out = clean_bundle({"text/html": view}, mark({}))[0]["text/html"]
        assert "fcolorbox" in out and not (_live_words(out) & ACTIVE), out


def test_markdown_math_is_neutralised_too() -> None:
    out = markdown_html(FAMILIES["paired_delimiter_x_delimsize"])
    assert not (_live_words(out) & ACTIVE), out


# ---- JupyterLab's MathJax itself (Node) ---------------------------------------------------------------

_STYLED = re.compile(
    r"\s(?:style|href|class|id|mathbackground|background|color)=|\sdata-(?!mjx-)|<menclose|<maction|<mglyph"
    r'|mathcolor="(?!red")|frame="solid"|lines="[^"]*solid'
)


def _probe(fragments: list[str]) -> list[list[str]]:
    if shutil.which("node") is None or not (PROBE.parent / "node_modules" / "mathjax-full").is_dir():
        message = "needs node and tests/browser's npm packages (mathjax-full) — run .ci/browser"
        if os.environ.get("RLM_BROWSER_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        ["node", str(PROBE)],
        input=json.dumps(fragments),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.browser
def test_mathjax_typesets_no_family_styled() -> None:
    names = list(FAMILIES)
    raw = _probe([f"<p>{FAMILIES[n]}</p>" for n in names])
    styled_raw = {
        n for n, formulas in zip(names, raw, strict=True) if any(_STYLED.search(f) for f in formulas)
    }
    assert set(STYLED_BEFORE) <= styled_raw, "the probe must see what the families draw unneutralised"
    paths = [(n, p, out) for n in names for p, out in _paths(FAMILIES[n]).items()]
    fragments = [out if p != "latex" else out.replace("<", "&lt;") for _, p, out in paths]
    for (name, path, _), formulas in zip(paths, _probe(fragments), strict=True):
        assert not any(_STYLED.search(f) for f in formulas), (name, path, formulas)


@pytest.mark.browser
def test_mathjax_finds_no_math_in_model_output_and_typesets_honest_math() -> None:
    model = [
        label_model_output(clean_bundle({"text/markdown": p})[0])["text/html"] for p in FAMILIES.values()
    ]
    assert all(formulas == [] for formulas in _probe(model))
    honest = _probe([clean_html(f"<p>{source}</p>") for source in HONEST])
    assert all(formulas and not any("merror" in f for f in formulas) for formulas in honest), honest


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_run_viewer_has_no_math_to_typeset(name: str) -> None:
    """The trajectory viewer (`rlm_result`'s HTML) is model-written text almost throughout: its reply, code,
    output, sub-call and answer fields show TeX as written, like model code's output."""
    from rlm_kernel.rootloop.viewer import tree_html

    payload = FAMILIES[name]
    turn = {"index": 1, "reply": payload, "code": f"print(r'{payload}')", "stdout": payload, "note": payload}
    call = {"kind": "llm_query", "prompt": payload, "answer": payload, "model": "m"}
    tree = {
        "run": {"question": "q", "answer": payload, "termination": "final", "message": payload},
        "turns": [{**turn, "calls": [call]}, {"index": 2, "reply": payload, "code": None}],
    }
    html = tree_html(tree)
    body = html.split("</style>", 1)[1]
    for run in _TAG.split(body):
        assert not re.search(r"[$\\]", run) or run in ("$", "\\"), (run, body)
