"""A LiteLLM proxy process on 127.0.0.1 for tests and benchmarks (owner: scale): found, configured, started.

The proxy lives in its own venv (`litellm[proxy]==1.99.4` pins restrictedpython<9, which the kernel cannot
share): `.venv-litellm/bin/litellm` in the checkout, or the executable named by `RLM_TEST_LITELLM`, or
`litellm` on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

__all__ = ["INSTALL", "Proxy", "free_port", "proxy_command"]

REPO = Path(__file__).resolve().parent.parent.parent
INSTALL = (
    "python3 -m venv .venv-litellm && .venv-litellm/bin/pip install 'litellm[proxy]==1.99.4' "
    "(or set RLM_TEST_LITELLM to a `litellm` executable)"
)


def proxy_command() -> list[str] | None:
    """The command that starts the proxy, or None when none is installed."""
    named = os.environ.get("RLM_TEST_LITELLM")
    for candidate in (named, str(REPO / ".venv-litellm" / "bin" / "litellm"), shutil.which("litellm")):
        if candidate and Path(candidate).is_file():
            return [candidate]
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proxy:
    """The proxy started with `config` (its YAML config as a dict) in `cwd`; ready once /health/liveliness
    answers (`start_seconds` says how long that took). `stop()` ends it."""

    def __init__(
        self, command: list[str], config: dict[str, Any], cwd: Path, *, timeout: float = 240
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = cwd / "litellm.log"
        path = cwd / "litellm.yaml"
        path.write_text(json.dumps(config))  # YAML is a superset of JSON
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "OPENAI_API_KEY")}
        env.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True"})  # no fetch of the price map at start
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [*command, "--config", str(path), "--host", "127.0.0.1", "--port", str(self.port)],
            env=env,
            cwd=cwd,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )
        while True:
            try:
                if httpx.get(f"{self.url}/health/liveliness", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > started + timeout:
                self.stop()
                raise RuntimeError(f"the LiteLLM proxy did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.25)
        self.start_seconds = time.monotonic() - started

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
