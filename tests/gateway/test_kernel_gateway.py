"""The `rlm` kernel behind a real Jupyter Kernel Gateway (owner: scale): notebooks run through it unchanged.

The gateway (`python -m kernel_gateway`) runs on a free 127.0.0.1 port with the kernel's environment (LLM
endpoint of tests/llm_server.py, display mode); notebooks execute through jupyter_server's gateway client with
nbclient, interrupts go through the gateway's REST API. Run with `python -m pytest -m gateway`.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kernel_gateway", reason="needs the [gateway] extra (jupyter_kernel_gateway)")

import httpx  # noqa: E402
import nbclient  # noqa: E402
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel  # noqa: E402
from jupyter_server.gateway.gateway_client import GatewayClient  # noqa: E402
from jupyter_server.gateway.managers import GatewayKernelManager  # noqa: E402
from nbformat import NotebookNode  # noqa: E402
from nbformat.v4 import new_code_cell, new_notebook  # noqa: E402

from tests.llm_server import LLMTestServer  # noqa: E402

pytestmark = pytest.mark.gateway

REPO = Path(__file__).resolve().parent.parent.parent
PROGRESS_MODEL = "IntProgressModel"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
KERNEL_VARIABLES = (
    "RLM_PROVIDER",
    "RLM_BASE_URL",
    "RLM_API_KEY",
    "RLM_MODEL",
    "RLM_CACHE",
    "RLM_CONFIG",
    "RLM_DISPLAY",
    "PYTHONWARNINGS",
    "PYDEVD_DISABLE_FILE_VALIDATION",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kernel_env(server: LLMTestServer, tmp: Path) -> dict[str, str]:
    (tmp / "none.toml").write_text("")
    env = dict(os.environ)
    env.update(
        {
            "RLM_PROVIDER": "openai",
            "RLM_BASE_URL": server.openai_base_url,
            "RLM_API_KEY": "sk-test-not-a-key",
            "RLM_MODEL": "test-model",
            "RLM_CACHE": "off",
            "RLM_CONFIG": str(tmp / "none.toml"),
            "RLM_DISPLAY": "widgets",
            "PYTHONWARNINGS": "ignore",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        }
    )
    try:
        KernelSpecManager().get_kernel_spec("rlm")
    except NoSuchKernel:  # not installed: serve the checkout's kernelspec
        (tmp / "kernels").mkdir()
        (tmp / "kernels" / "rlm").symlink_to(REPO / "kernelspec", target_is_directory=True)
        env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(tmp), env.get("JUPYTER_PATH")]))
    return env


class Gateway:
    """A Kernel Gateway process on 127.0.0.1 and the gateway client pointed at it."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = cwd / "gateway.log"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernel_gateway",
                "--KernelGatewayApp.ip=127.0.0.1",
                f"--KernelGatewayApp.port={self.port}",
                "--KernelGatewayApp.default_kernel_name=rlm",
                # kernels inherit only the listed variables of the gateway's environment
                *(f"--KernelGatewayApp.env_process_whitelist={name}" for name in KERNEL_VARIABLES),
            ],
            env=env,
            cwd=cwd,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{self.url}/api/kernelspecs", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"Kernel Gateway did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.2)
        GatewayClient.instance().url = self.url

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer(mode="echo") as srv:
        yield srv


@pytest.fixture(scope="module")
def gateway(server: LLMTestServer) -> Iterator[Gateway]:
    tmp = Path(tempfile.mkdtemp(prefix="rlm-gateway-"))
    gw = Gateway(_kernel_env(server, tmp), tmp)
    try:
        yield gw
    finally:
        gw.stop()


def run_notebook(sources: list[str]) -> tuple[NotebookNode, nbclient.NotebookClient]:
    """Execute a notebook of `sources` on a new `rlm` kernel of the gateway; errors stay in the outputs.

    jupyter_server's GatewayKernelManager starts `python3` unless `start_kernel` gets `kernel_name`
    (its `kernel_name` trait is not used), so the name is passed to `execute` too."""
    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    client = nbclient.NotebookClient(
        nb, km=GatewayKernelManager(kernel_name="rlm"), timeout=120, allow_errors=True
    )
    client.execute(kernel_name="rlm")
    return nb, client


def text_of(cell: NotebookNode) -> str:
    parts = []
    for out in cell.outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            parts.append(out.data.get("text/plain", ""))
    return "".join(parts)


def errors_of(cell: NotebookNode) -> list[tuple[str, str]]:
    return [(o.ename, o.evalue) for o in cell.outputs if o.output_type == "error"]


def test_notebook_cells_refusals_and_model_calls_through_the_gateway(
    gateway: Gateway, server: LLMTestServer
) -> None:
    since = len(server.requests)
    nb, _ = run_notebook(
        [
            "x = 6 * 7\nprint(x)",
            "import os",
            "1/0",
            "x + 1",
            "llm_query('say hello through the gateway')",
        ]
    )
    cells = nb.cells
    assert text_of(cells[0]) == "42\n"
    [(ename, evalue)] = errors_of(cells[1])
    assert ename == "SandboxError" and "os" in evalue, cells[1].outputs
    assert errors_of(cells[2]) == [("ZeroDivisionError", "division by zero")]
    assert text_of(cells[3]) == "43", "a failing cell keeps the kernel and its variables"
    assert "say hello through the gateway" in text_of(cells[4])
    prompts = [r.last_user for r in server.requests[since:]]
    assert prompts == ["say hello through the gateway"]


def _progress_comms(state: dict[str, Any]) -> list[dict[str, Any]]:
    """nbclient's `widget_state`: {comm_id: model state}, built from the comm_open/comm_msg it received."""
    return [s for s in state.values() if s.get("_model_name") == PROGRESS_MODEL]


def test_widget_comms_and_text_fallback_through_the_gateway(gateway: Gateway) -> None:
    nb, client = run_notebook(
        [
            "answers = llm_query_batched([f'item {i}' for i in range(5)])\nlen(answers)",
            "%rlm set display=text",
            "answers = llm_query_batched(['one', 'two'])",
        ]
    )
    widget_cell, _, text_cell = nb.cells
    assert text_of(widget_cell).endswith("5")
    views = [o for o in widget_cell.outputs if WIDGET_VIEW in o.get("data", {})]
    assert len(views) == 1, widget_cell.outputs
    bars = _progress_comms(client.widget_state)
    assert bars and bars[-1]["value"] == 5, client.widget_state
    assert "fan-out (5 prompts" in text_of(widget_cell)
    assert not any(o.output_type == "display_data" for o in text_cell.outputs), text_cell.outputs
    assert "fan-out (2 prompts, first: one): 2/2 done" in text_of(text_cell)
    assert not errors_of(text_cell)


async def _interrupt_run(url: str) -> list[dict[str, Any]]:
    km = GatewayKernelManager(kernel_name="rlm")
    await km.start_kernel(kernel_name="rlm")
    kc = km.client()
    await kc.start_channels()
    replies: list[dict[str, Any]] = []
    try:
        info = await _request(kc, kc.kernel_info())
        assert info["content"]["implementation"] == "rlm_kernel"
        code = "n = 0\nprint('looping', flush=True)\nwhile True:\n    n += 1"
        msg_id = kc.execute(code, stop_on_error=False)
        await _wait_running(kc, msg_id)  # the cell says it runs: no guess with a sleep
        async with httpx.AsyncClient() as http:
            r = await http.post(f"{url}/api/kernels/{km.kernel_id}/interrupt", timeout=30)
            assert r.status_code == 204, r.text
        replies.append(await _reply(kc, msg_id, timeout=60))
        replies.append(await _request(kc, kc.execute("n > 0", stop_on_error=False)))
    finally:
        await kc.stop_channels() if asyncio.iscoroutinefunction(kc.stop_channels) else kc.stop_channels()
        await km.shutdown_kernel()
    return replies


async def _wait_running(kc: Any, msg_id: str) -> None:
    """Until the cell `msg_id` has printed (its loop is then about to run)."""
    while True:
        m = await kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream":
            return


async def _reply(kc: Any, msg_id: str, timeout: float) -> dict[str, Any]:
    while True:
        m = await kc.get_shell_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") == msg_id:
            return m


async def _request(kc: Any, msg_id: str) -> dict[str, Any]:
    return await _reply(kc, msg_id, timeout=60)


def test_interrupt_through_the_gateway_stops_the_cell_and_keeps_the_kernel(gateway: Gateway) -> None:
    stopped, after = asyncio.run(_interrupt_run(gateway.url))
    assert stopped["content"]["status"] == "error"
    assert stopped["content"]["ename"] == "KeyboardInterrupt", stopped["content"]
    assert after["content"]["status"] == "ok", after["content"]
