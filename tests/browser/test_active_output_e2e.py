"""Issue 26, class 1 in a real browser: script in the outputs of model-written code and of a person's cell
does not run in JupyterLab (headless Chromium, Playwright) — the page title stays, no flag is set, and the
Jupyter server's API is not reached (no file is written through it). The same payload run in the page
directly does all three: the control that shows the probe can see an escape. Set up and run by `.ci/browser`
(`bash .ci/browser -k active_output` runs this test alone).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from tests.browser.test_frontends_e2e import ARTIFACTS, CHROMIUM, FRONTENDS, KERNEL, _free_port, _missing
from tests.llm_server import LLMTestServer
from tests.rootloop.script import Script, repl

pytestmark = pytest.mark.browser

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

# What a prompt-injected model would run in the person's browser: mark the page, rename it, and write a file
# through the Jupyter server's REST API as the person (the XSRF token is in the page's cookie).
PAYLOAD = (
    "window.__rlm_pwned = (window.__rlm_pwned || 0) + 1; document.title = 'pwned-' + TAG; "
    "fetch('/api/contents/pwned-' + TAG + '.txt', {method: 'PUT', headers: {'X-XSRFToken': "
    "((document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || ''), 'Content-Type': 'application/json'}, "
    "body: JSON.stringify({type: 'file', format: 'text', content: 'pwned'})});"
)
# The vectors: application/javascript, <script>, <img onerror>, SVG, Markdown raw HTML, a model-made object's
# _repr_html_ displayed by the person's cell, and the person's own JS bundle. With the output policy switched
# off, every one of them writes its pwned-<vector>.txt through the server API (checked by hand, 2026-12-03).

MODEL_CODE = f"""P = {PAYLOAD!r}
def p(tag):
    return P.replace('TAG', repr(tag))
display({{'application/javascript': p('js'), 'text/plain': 'js'}}, raw=True)
display({{'text/html': '<script>' + p('script') + '</script>'}}, raw=True)
display({{'text/html': '<img src=x onerror="' + p('img') + '">'}}, raw=True)
display({{'text/html': '<svg><image href=x onerror="' + p('svg') + '"/></svg>'}}, raw=True)
display({{'text/markdown': 'md <img src=x onerror="' + p('md') + '">'}}, raw=True)
class Evil:
    def _repr_html_(self):
        return '<img src=x onerror="' + p('obj') + '">'
evil = Evil()
x = llm_query('q')"""

PERSON_CELL = "display({'application/javascript': p('person'), 'text/plain': 'person'}, raw=True)\nevil"


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    missing = _missing()
    if missing:
        message = "browser test needs: " + ", ".join(missing) + " — run .ci/browser to install them"
        if os.environ.get("RLM_BROWSER_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def llm() -> Iterator[LLMTestServer]:
    server = LLMTestServer()
    server.start()
    server.reply_with(Script(root=[repl(MODEL_CODE), repl("FINAL(x)")]))
    yield server
    server.stop()


@pytest.fixture
def lab(tmp_path: Path, llm: LLMTestServer) -> Iterator[tuple[str, Path]]:
    """JupyterLab on loopback, its kernels pointed at the scripted LLM server; yields (url template, root)."""
    root = tmp_path / "root"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env.update(
        RLM_PROVIDER="openai",
        RLM_BASE_URL=llm.openai_base_url,
        RLM_API_KEY="sk-local-test",
        RLM_MODEL="test-model",
        RLM_CACHE="off",
        RLM_CONFIG=str(tmp_path / "config.toml"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "lab-workspaces"),
        PYTHONPATH=str(REPO),
    )
    (tmp_path / "config.toml").write_text("")
    notification = (
        tmp_path / "lab-settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    )
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable, "-m", *FRONTENDS["jupyterlab"][0],
            "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"jupyterlab did not start:\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"{base}/{FRONTENDS['jupyterlab'][1]}?token={token}", root
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_active_output_of_model_code_and_cells_does_not_run_in_jupyterlab(
    lab: tuple[str, Path], tmp_path: Path
) -> None:
    url_template, root = lab
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": KERNEL, "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("%%rlm --shared\nShow the results."),
        nbformat.v4.new_code_cell(PERSON_CELL),
    ]
    nbformat.write(nb, root / "active.ipynb")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    config = {
        "url": url_template.format(path="active.ipynb"),
        "chromium": CHROMIUM,
        "screenshot": str(ARTIFACTS / "jupyterlab-active-output.png"),
        "timeout_ms": 120_000,
        "control_js": PAYLOAD.replace("TAG", "'control'"),
    }
    cfg_path = tmp_path / "drive.json"
    cfg_path.write_text(json.dumps(config))
    run = subprocess.run(
        ["node", str(HERE / "drive_active.mjs"), str(cfg_path)],
        cwd=HERE, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    page = json.loads(run.stdout.strip().splitlines()[-1])
    assert page["ok"], f"{page.get('error')}\noutputs: {page.get('outputs_text')}\n{run.stderr[-2000:]}"

    # nothing in the outputs ran: the title, the flag, the server's files, the live DOM of the outputs
    written = [p.name for p in root.glob("pwned-*.txt") if p.name != "pwned-control.txt"]
    assert not written, f"a script in an output reached the server API: {written}"
    assert "pwned" not in page["title_after"] and page["flag_after"] is None, page
    assert page["active_elements"] == [], page["active_elements"]
    # ... and the cells did run, their outputs on the page: the kernel's own viewer (styled), the displays
    text = "\n".join(page["outputs_text"])
    assert "answer accepted by the FINAL gate" in text and "person" in text, text
    assert page["viewer_styled"] == "solid", page  # the kernel's own run display keeps its styling

    # the control: the same payload, run in the page, renames it, sets the flag and writes through the API
    assert page["title_control"] == "pwned-control" and page["flag_control"] == 1, page
    deadline = time.monotonic() + 10
    while not (root / "pwned-control.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (root / "pwned-control.txt").read_text() == "pwned"
