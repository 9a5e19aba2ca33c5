"""Real-browser end-to-end test: JupyterLab 4 and Notebook 7, headless Chromium (Playwright), the `rlm`
kernel, a local LLM.

Runs a notebook fanning out 200 calls in each frontend, reads the widgets off the page while they update and
when done, and saves a screenshot of each to out/browser/. Set up and run by `.ci/browser`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from tests.llm_server import LLMTestServer, count_words

pytestmark = pytest.mark.browser

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ARTIFACTS = REPO / "out" / "browser"  # the screenshots, for the README
CHROMIUM = os.environ.get("RLM_CHROMIUM", "/usr/bin/chromium")
KERNEL = os.environ.get("RLM_BROWSER_KERNEL", "rlm")
N_CALLS = 200
LATENCY = 0.25  # seconds per answer: 200 calls at 16 at a time take ~3 s, long enough to watch them update
# How each frontend is started and where it opens a notebook.
FRONTENDS = {
    "jupyterlab": (
        ["jupyterlab", "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly"],
        "lab/tree/{path}",
    ),
    "notebook7": (["notebook", "--JupyterNotebookApp.expose_app_in_browser=True"], "notebooks/{path}"),
}  # fmt: skip
PRICE_IN, PRICE_OUT = 1.0, 2.0  # USD per 1M tokens, set in the kernel's config file
BUDGET_MAX_CALLS = 250  # 200 of 250 = 80 %: the calls gauge must turn to its warning style

# the summary's title carries llm_query_batched's label: the number of prompts and the first one
SUMMARY_HEAD = f"fan-out ({N_CALLS} prompts, first: question 0: how far has this fan-out got): "
FANOUT_CELL = f"""prompts = [f"question {{i}}: how far has this fan-out got" for i in range({N_CALLS})]
answers = llm_query_batched(prompts)
len(answers)"""


def _missing() -> list[str]:
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"{CHROMIUM} (apt-get install -y chromium)")
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        missing.append("playwright-core (npm install in tests/browser)")
    if shutil.which("node") is None:
        missing.append("node")
    for module, package in (("jupyterlab", "jupyterlab"), ("notebook", "notebook>=7")):
        if importlib.util.find_spec(module) is None:
            missing.append(f"{package} (pip install '{package}')")
    return missing


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    missing = _missing()
    if missing:
        message = "browser test needs: " + ", ".join(missing) + " — run .ci/browser to install them"
        if os.environ.get("RLM_BROWSER_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def llm() -> Iterator[LLMTestServer]:
    server = LLMTestServer(mode="echo", latency=LATENCY)
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=sorted(FRONTENDS))
def frontend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def lab(tmp_path: Path, llm: LLMTestServer, frontend: str) -> Iterator[tuple[str, Path]]:
    """The frontend on loopback, its kernels pointed at the local LLM server; yields (url template, root)."""
    root = tmp_path / "root"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env.pop("RLM_DISPLAY", None)  # the default (auto) must pick widgets in JupyterLab
    env.update(
        RLM_PROVIDER="openai",
        RLM_BASE_URL=llm.openai_base_url,
        RLM_API_KEY="sk-local-test",
        RLM_MODEL="test-model",
        RLM_CACHE="off",
        RLM_BUDGET_MAX_CALLS=str(BUDGET_MAX_CALLS),
        RLM_CONFIG=str(tmp_path / "config.toml"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "lab-workspaces"),
        PYTHONPATH=str(REPO),
    )
    # prices (USD per 1M tokens) make the cost figures real: 1,600 in + 1,600 out tokens = $0.0048
    prices = f'"test-model" = {{ input = {PRICE_IN}, output = {PRICE_OUT} }}'
    (tmp_path / "config.toml").write_text(f"[prices]\n{prices}\n")
    # no "get notified about Jupyter news?" toast over the screenshot (and no news fetch)
    notification = (
        tmp_path / "lab-settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    )
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable, "-m", *FRONTENDS[frontend][0],
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
                raise RuntimeError(f"{frontend} did not start:\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"{base}/{FRONTENDS[frontend][1]}?token={token}", root
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": KERNEL, "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("%rlm budget"),
        nbformat.v4.new_code_cell(FANOUT_CELL),
    ]
    nbformat.write(nb, path)


def test_fanout_and_budget_widgets_update_live(
    lab: tuple[str, Path], llm: LLMTestServer, tmp_path: Path, frontend: str
) -> None:
    url_template, root = lab
    _write_notebook(root / "fanout.ipynb")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / f"{frontend}-fanout.png"
    # What the budget must end up showing is what the server counted, so compute it after the run; the page is
    # given a provisional target (the server's count is deterministic: words of each request's messages).
    prompts = [f"question {i}: how far has this fan-out got" for i in range(N_CALLS)]
    config = {
        "url": url_template.format(path="fanout.ipynb"),
        "chromium": CHROMIUM,
        "screenshot": str(screenshot),
        "expect_count": f"{N_CALLS}/{N_CALLS}",
        "expect_input_tokens": f"{sum(count_words(p) for p in prompts):,}",
        "timeout_ms": 120_000,
    }
    cfg_path = tmp_path / "drive.json"
    cfg_path.write_text(json.dumps(config))
    run = subprocess.run(
        ["node", str(HERE / "drive_notebook.mjs"), str(cfg_path)],
        cwd=HERE, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    page = json.loads(run.stdout.strip().splitlines()[-1])
    assert page["ok"], f"{page.get('error')}\noutputs: {page.get('outputs_text')}\n{run.stderr[-2000:]}"

    answered = [r for r in llm.requests if r.path.endswith("/chat/completions")]
    assert len(answered) == N_CALLS
    server_in = sum(count_words(r.prompt) for r in answered)
    server_out = sum(count_words(r.last_user) for r in answered)

    assert page["fanout_count"] == f"{N_CALLS}/{N_CALLS}"
    # live: the page showed the count and the budget's calls moving while the calls were answered
    moving = [c for c in page["fanout_counts_seen"] if c != f"{N_CALLS}/{N_CALLS}"]
    assert len(moving) >= 2, (page["fanout_counts_seen"], page["observed"])
    calls_between = [c for c in page["budget_calls_seen"] if not c.startswith(("0 of", f"{N_CALLS} of"))]
    assert calls_between, page["budget_calls_seen"]
    assert page["widget_count"] == 1
    usd = (server_in * PRICE_IN + server_out * PRICE_OUT) / 1e6
    assert f"{server_in:,} in / {server_out:,} out tokens" in page["fanout_stats"], page["fanout_stats"]
    assert page["budget_usd"] == f"${usd:.4f}", page
    assert page["budget_counts"] == "0 cache hits · 0 failed · 0 in flight", page
    assert page["budget_input_tokens"] == f"{server_in:,}", page
    assert page["budget_output_tokens"] == f"{server_out:,}", page
    assert page["budget_calls"] == f"{N_CALLS} of {BUDGET_MAX_CALLS} (80%)", page
    assert "progress-bar-warning" in page["budget_gauge_classes"], page
    assert "progress-bar-success" in page["fanout_bar_classes"], page
    # the one-line summary is the widget display's text form (for exports), never a second line under it
    assert not any(t.startswith(SUMMARY_HEAD) for t in page["outputs_text"]), page
    assert screenshot.stat().st_size > 10_000
