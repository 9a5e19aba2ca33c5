"""A replayed session is quiet: no warning for answers from the cache, and no traceback when the kernel
shuts down with budget and fan-out widgets on screen (issue 21, "clean output")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

from tests.kernel_client import _kernel_spec_manager
from tests.llm_server import LLMTestServer

CELLS = ["%rlm budget", "print(llm_query('the same question'))", "len(llm_query_batched(['one', 'two']))"]


def _session(env: dict[str, str], cwd: Path, log_path: Path) -> list[tuple[str, str]]:
    """Run CELLS in a fresh kernel, shut it down; (stream name, text) of every stream and error output.
    The kernel process's own stdout/stderr go to `log_path`."""
    outputs: list[tuple[str, str]] = []

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            outputs.append((msg["content"]["name"], msg["content"]["text"]))
        elif msg["msg_type"] == "error":
            outputs.append(("error", msg["content"]["evalue"]))

    with log_path.open("w") as log:
        km = KernelManager(kernel_name="rlm", kernel_spec_manager=_kernel_spec_manager("rlm"))
        km.start_kernel(env=env, cwd=str(cwd), stdout=log, stderr=subprocess.STDOUT)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            for cell in CELLS:
                reply = kc.execute_interactive(cell, timeout=60, output_hook=hook)
                assert reply["content"]["status"] == "ok", (cell, outputs)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=False)
    return outputs


def test_replay_prints_no_warning_and_shutdown_no_traceback(tmp_path: Path) -> None:
    with LLMTestServer() as server:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("RLM_")},
            "RLM_PROVIDER": "openai",
            "RLM_BASE_URL": server.openai_base_url,
            "RLM_API_KEY": "sk-local-test",
            "RLM_MODEL": "model-without-a-price",  # its first real call warns: counted in tokens only
            "RLM_CACHE": "readwrite",
            "RLM_CACHE_DIR": str(tmp_path / "cache"),
            "RLM_DISPLAY": "widgets",  # the budget and fan-out widgets are open when the session closes
        }
        recorded = _session(env, tmp_path, tmp_path / "record.log")
        answered = len(server.requests)
        replayed = _session(env, tmp_path, tmp_path / "replay.log")
        assert len(server.requests) == answered == 3  # the second session sent nothing
    warned = [text for name, text in recorded if name == "stderr"]
    assert len(warned) == 1 and "UnknownPriceWarning" in warned[0], recorded  # the test can see a warning
    assert [name for name, _ in replayed] == ["stdout"], replayed  # only the printed answer
    for log in ("record.log", "replay.log"):
        text = (tmp_path / log).read_text()
        assert "Traceback" not in text and "Error" not in text, f"{log}:\n{text[-3000:]}"
