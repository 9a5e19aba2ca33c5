"""Issue 26, class 1 in a real browser: TeX that defines or assembles commands draws no styled box in
JupyterLab (headless Chromium, Playwright), and script in the same outputs does not run.

A `%%rlm --shared` run's model code displays every family of tests/output/tex_families.py (Markdown, HTML,
LaTeX) — among them mathtools' `\\DeclarePairedDelimiterX` whose `\\delimsize` assembles `\\fcolorbox` — plus
a `\\href{javascript:…}` and an `<img onerror>` carrying the script of test_active_output_e2e; the person's
next cell displays the families too (as Markdown), and its honest formula. In the page: no formula in
any output has a border, background, colour or link; model output has no typeset formula at all; the person's
honest formula is typeset; the title is unchanged and no request reaches the server's contents API. The
control: the same TeX in the notebook's own Markdown cell (which JupyterLab typesets as written) does draw the
green box, so the probe sees one when it is there; and the script, run in the page, renames it and writes
through the API. MathJax's own marks (red for an undefined command, its red-on-yellow error display of the
source) are not styling a payload chose.

    bash .ci/browser -k tex_pieces          # installs JupyterLab, Chromium, playwright-core, then runs this
    python -m pytest -m browser tests/browser/test_tex_pieces_e2e.py   # with those installed
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from tests.browser.test_active_output_e2e import PAYLOAD, _tools, lab  # noqa: F401 (fixtures)
from tests.browser.test_frontends_e2e import ARTIFACTS, CHROMIUM, KERNEL
from tests.llm_server import LLMTestServer
from tests.output.tex_families import FAMILIES
from tests.rootloop.script import Script, repl

pytestmark = pytest.mark.browser

HERE = Path(__file__).resolve().parent
PAYLOADS = list(FAMILIES.values())
BOX = FAMILIES["paired_delimiter_x_delimsize"]

MODEL_CODE = f"""P = {PAYLOADS!r}
S = {PAYLOAD!r}.replace('TAG', repr('tex'))
for s in P:
    display({{'text/markdown': s}}, raw=True)
    display({{'text/html': '<p>' + s + '</p>'}}, raw=True)
    display({{'text/latex': s, 'text/plain': 'latex'}}, raw=True)
H = '$\\\\href{{javascript:' + S + '}}{{FINAL}}$ <img src=x onerror="' + S + '">'
display({{'text/markdown': H}}, raw=True)
display({{'text/markdown': 'model-done'}}, raw=True)
x = llm_query('q')"""

PERSON_CELL = f"""display({{'text/markdown': r'honest: $\\frac{{1}}{{2}} + \\alpha^2$'}}, raw=True)
for s in {PAYLOADS!r}:
    display({{'text/markdown': 'person: ' + s}}, raw=True)
display({{'text/markdown': 'person-done'}}, raw=True)"""


@pytest.fixture
def llm() -> Iterator[LLMTestServer]:
    server = LLMTestServer()
    server.start()
    server.reply_with(Script(root=[repl(MODEL_CODE), repl("FINAL(x)")]))
    yield server
    server.stop()


def test_tex_families_draw_no_styled_box_in_jupyterlab(lab: tuple[str, Path], tmp_path: Path) -> None:  # noqa: F811
    url_template, root = lab
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": KERNEL, "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"control, the notebook's own text: {BOX}"),
        nbformat.v4.new_code_cell("%%rlm --shared\nShow the results."),
        nbformat.v4.new_code_cell(PERSON_CELL),
    ]
    nbformat.write(nb, root / "tex.ipynb")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    config = {
        "url": url_template.format(path="tex.ipynb"),
        "chromium": CHROMIUM,
        "screenshot": str(ARTIFACTS / "jupyterlab-tex-pieces.png"),
        "timeout_ms": 180_000,
        "control_js": PAYLOAD.replace("TAG", "'control'"),
        # every display on the page, and the honest formula typeset, before anything is measured
        "wait_for_text": ["honest:", "model-done", "person-done"],
        "wait_for_math_in": "honest:",
    }
    cfg_path = tmp_path / "drive.json"
    cfg_path.write_text(json.dumps(config))
    run = subprocess.run(
        ["node", str(HERE / "drive_active.mjs"), str(cfg_path)],
        cwd=HERE, capture_output=True, text=True, timeout=500,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    page = json.loads(run.stdout.strip().splitlines()[-1])
    assert page["ok"], f"{page.get('error')}\noutputs: {page.get('outputs_text')}\n{run.stderr[-2000:]}"
    math = page["math"]

    # the control: the same TeX, typeset as written in the notebook's own Markdown cell, draws the green box
    assert math["in_markdown_cells"] >= 1 and math["styled_in_markdown_cells"], math
    # no output draws one; the model's outputs have no formula at all; the person's honest one is typeset
    assert math["styled_in_outputs"] == [], math["styled_in_outputs"]
    text = "\n".join(page["outputs_text"])
    assert "FINAL ANSWER" in text and "honest:" in text, text  # the displays are on the page, as text
    typeset = [label for count, label in math["per_output"] if count]
    assert typeset and all(label.startswith(("person:", "honest:")) for label in typeset), typeset
    assert any(label.startswith("honest:") for label in typeset), typeset
    # no script ran: title, flag, the server's contents API
    assert "pwned" not in page["title_after"] and page["flag_after"] is None, page
    assert page["api_writes"] == [] and not list(root.glob("pwned-tex*")), page["api_writes"]
    assert page["active_elements"] == [], page["active_elements"]
    # the script itself does act when run in the page (the probe can see an escape)
    assert page["title_control"] == "pwned-control" and page["api_writes_with_control"], page
