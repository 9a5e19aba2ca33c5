"""A LiteLLM proxy process on 127.0.0.1 for tests and benchmarks (owner: scale): found, configured, started.

The proxy lives in its own venv (`litellm[proxy]==1.99.4` pins restrictedpython<9, which the kernel cannot
share): `.venv-litellm/bin/litellm` in the checkout, or the executable named by `RLM_TEST_LITELLM`, or
`litellm` on PATH.

`gateway_config` adds the settings a gateway team runs the proxy with (LiteLLM's production checklist: no
verbose or message logging, no spend or error logs without a database, no end-user cost tracking, no token
counting when the upstream reports usage); `Proxy(workers=N)` starts N uvicorn workers. Measured effect in
benchmarks/bench_gateway.py and the README's *LLM gateway* section.
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

__all__ = ["GATEWAY_ENV", "INSTALL", "Proxy", "free_port", "gateway_config", "proxy_command"]

REPO = Path(__file__).resolve().parent.parent.parent
INSTALL = (
    "python3 -m venv .venv-litellm && .venv-litellm/bin/pip install 'litellm[proxy]==1.99.4' "
    "(or set RLM_TEST_LITELLM to a `litellm` executable)"
)


GATEWAY_ENV = {"LITELLM_LOG": "ERROR", "LITELLM_MODE": "PRODUCTION"}
GATEWAY_LITELLM_SETTINGS: dict[str, Any] = {
    "set_verbose": False,
    "json_logs": False,
    "turn_off_message_logging": True,
    "disable_end_user_cost_tracking": True,
    "disable_token_counter": True,
    "disable_add_user_agent_to_request_tags": True,
    "request_timeout": 600,
}
GATEWAY_GENERAL_SETTINGS: dict[str, Any] = {
    "disable_spend_logs": True,
    "disable_error_logs": True,
    "background_health_checks": False,
}


def gateway_config(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with the production settings above added (the config's own values win)."""
    return {
        **config,
        "litellm_settings": {**GATEWAY_LITELLM_SETTINGS, **config.get("litellm_settings", {})},
        "general_settings": {**GATEWAY_GENERAL_SETTINGS, **config.get("general_settings", {})},
    }


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
    answers (`start_seconds` says how long that took). `stop()` ends it. With `workers` > 1, uvicorn's
    supervisor runs that many worker processes (each keeps its own in-memory budgets and rate limits: shared
    ones need the proxy's Redis); `cpu_seconds()` is the CPU of all of them."""

    def __init__(
        self,
        command: list[str],
        config: dict[str, Any],
        cwd: Path,
        *,
        timeout: float = 240,
        workers: int = 1,
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = cwd / "litellm.log"
        path = cwd / "litellm.yaml"
        path.write_text(json.dumps(config))  # YAML is a superset of JSON
        environ = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "OPENAI_API_KEY")}
        environ.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True"})  # no fetch of the price map at start
        environ.update(env or {})
        args = [*command, "--config", str(path), "--host", "127.0.0.1", "--port", str(self.port)]
        if workers > 1:
            # the supervisor restarts a worker that does not answer its health check in time (default 5 s),
            # and on a busy machine importing litellm takes longer: without this the workers never come up
            args += ["--num_workers", str(workers), "--timeout_worker_healthcheck", str(int(timeout))]
        started = time.monotonic()
        self.proc = subprocess.Popen(
            args,
            env=environ,
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

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) used so far by the proxy's processes (supervisor and workers)."""
        total, todo = 0.0, [self.proc.pid]
        while todo:
            pid = todo.pop()
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                children = [
                    c
                    for t in Path(f"/proc/{pid}/task").iterdir()
                    for c in (t / "children").read_text().split()
                ]
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            todo += [int(c) for c in children]
        return total

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
