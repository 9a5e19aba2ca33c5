"""A real `rlm` kernel started through jupyter_client, for tests and benchmarks (owner: kernel).

`KernelHarness(env=...)` starts a kernel; `.execute(code)` returns an `Execution`; `ok(kernel, code)` runs
code that must succeed, `probe(kernel, expr)` reads a JSON-able value back.
Fixtures: `rlm_kernel` (module-scoped), `rlm_kernel_factory`.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import KernelManager

__all__ = ["Execution", "KernelDied", "KernelHarness", "ok", "probe", "rlm_kernel", "rlm_kernel_factory"]

REPO = Path(__file__).resolve().parent.parent


class KernelDied(RuntimeError):
    """The kernel process exited while a request was running (e.g. killed by the C-loop CPU backstop)."""


@dataclass
class Execution:
    """Everything one execute_request produced.

    `result` is the text/plain of the execute_result (None if none); `result_data` its full mime bundle;
    `display` the data dicts of display_data/update_display_data messages in order.
    """

    status: str
    stdout: str = ""
    stderr: str = ""
    result: str | None = None
    result_data: dict | None = None
    display: list[dict] = field(default_factory=list)
    error_name: str | None = None
    error_value: str | None = None
    traceback: list[str] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    reply: dict = field(default_factory=dict)
    execution_count: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def user_expressions(self) -> dict:
        return self.reply.get("user_expressions", {})

    @property
    def all_text(self) -> str:
        """Every piece of text the cell sent back, for canary checks."""
        parts = [self.stdout, self.stderr, self.result or "", self.error_name or "", self.error_value or ""]
        parts += self.traceback
        parts += [str(d) for d in self.display]
        parts.append(str(self.result_data or ""))
        parts.append(str(self.reply))
        return "\n".join(parts)

    def __str__(self) -> str:  # readable assertion messages
        out = f"status={self.status}"
        for name in ("stdout", "stderr", "result", "error_name", "error_value"):
            value = getattr(self, name)
            if value:
                out += f"\n{name}: {value!s:.2000}"
        if self.traceback:
            out += "\ntraceback:\n" + _strip_ansi("\n".join(self.traceback))[:4000]
        return out


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _kernel_spec_manager(kernel_name: str) -> KernelSpecManager:
    """The installed spec if there is one; for `rlm`, the spec `rlm-kernel install` would write otherwise."""
    ksm = KernelSpecManager()
    try:
        ksm.get_kernel_spec(kernel_name)
        return ksm
    except NoSuchKernel:
        if kernel_name != "rlm":
            raise
    from rlm_kernel.install import kernel_json

    tmp = Path(tempfile.mkdtemp(prefix="rlm-spec-"))
    (tmp / "rlm").mkdir()
    (tmp / "rlm" / "kernel.json").write_text(json.dumps(kernel_json()))  # this interpreter, by absolute path
    return KernelSpecManager(kernel_dirs=[str(tmp)])


class KernelHarness:
    """Start a kernel (default `rlm`) with jupyter_client and talk to it.

    `env` adds variables to this process's environment for the kernel (e.g. RLM_BASE_URL, limits);
    `remove_env` drops variables. `cwd` defaults to a fresh temporary folder. `extra_arguments` are appended
    to the kernel's command line (e.g. `--RLMShell.sandbox_limits cpu_seconds=5`).
    """

    def __init__(
        self,
        kernel_name: str = "rlm",
        env: dict[str, str] | None = None,
        *,
        remove_env: tuple[str, ...] = (),
        cwd: str | None = None,
        startup_timeout: float = 60,
        extra_arguments: list[str] | None = None,
        kernel_spec_manager: KernelSpecManager | None = None,
    ) -> None:
        self.kernel_name = kernel_name
        full_env = dict(os.environ)
        for name in remove_env:
            full_env.pop(name, None)
        full_env.update(env or {})
        full_env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        self.env = full_env
        self._own_cwd = cwd is None
        self.cwd = cwd or tempfile.mkdtemp(prefix="rlm-kernel-cwd-")
        t0 = time.perf_counter()
        for attempt in range(3):
            self.km = KernelManager(
                kernel_name=kernel_name,
                kernel_spec_manager=kernel_spec_manager or _kernel_spec_manager(kernel_name),
            )
            self.km.start_kernel(env=full_env, cwd=self.cwd, extra_arguments=list(extra_arguments or []))
            self.kc = self.km.client()
            self.kc.start_channels()
            try:
                self.kc.wait_for_ready(timeout=startup_timeout)
                break
            except RuntimeError as err:
                # jupyter_client picks free TCP ports, then the kernel binds them: on a busy machine another
                # process can take one in between ("Address already in use") and the kernel exits at once.
                # Start again on fresh ports; a kernel that dies for its own reasons dies every time.
                last = "died" not in str(err) or attempt == 2
                self._stop(remove_cwd=last)
                if last:
                    raise
        self.startup_seconds = time.perf_counter() - t0

    # -- requests ----------------------------------------------------------------------------------
    def execute(
        self,
        code: str,
        timeout: float = 60,
        *,
        user_expressions: dict[str, str] | None = None,
        stop_on_error: bool = True,
        silent: bool = False,
        store_history: bool = True,
        on_message: Callable[[dict], None] | None = None,
    ) -> Execution:
        """Run `code` and collect its iopub messages until the kernel is idle again."""
        msg_id = self.kc.execute(
            code,
            silent=silent,
            store_history=store_history,
            user_expressions=user_expressions or {},
            allow_stdin=False,
            stop_on_error=stop_on_error,
        )
        return self.collect(msg_id, timeout, on_message=on_message)

    def collect(
        self, msg_id: str, timeout: float = 60, on_message: Callable[[dict], None] | None = None
    ) -> Execution:
        """Gather the iopub output and the shell reply of the request `msg_id`."""
        deadline = time.monotonic() + timeout
        ex = Execution(status="unknown")
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"kernel did not go idle within {timeout} s; output so far:\n{ex}")
            try:
                msg = self.kc.get_iopub_msg(timeout=min(remaining, 1.0))
            except queue.Empty:
                if not self.km.is_alive():
                    raise KernelDied(f"the kernel died during the request; output so far:\n{ex}") from None
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            ex.messages.append(msg)
            if on_message is not None:
                on_message(msg)
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                if content["name"] == "stdout":
                    ex.stdout += content["text"]
                else:
                    ex.stderr += content["text"]
            elif kind == "execute_result":
                ex.result_data = content["data"]
                ex.result = content["data"].get("text/plain")
            elif kind in ("display_data", "update_display_data"):
                ex.display.append(content["data"])
            elif kind == "error":
                ex.error_name, ex.error_value, ex.traceback = (
                    content["ename"],
                    content["evalue"],
                    content["traceback"],
                )
            elif kind == "status" and content["execution_state"] == "idle":
                break
        reply = self._shell_reply(msg_id, max(1.0, deadline - time.monotonic()))
        ex.reply = reply["content"]
        ex.status = ex.reply.get("status", "unknown")
        ex.execution_count = ex.reply.get("execution_count")
        if ex.status == "error" and ex.error_name is None:
            ex.error_name, ex.error_value = ex.reply.get("ename"), ex.reply.get("evalue")
            ex.traceback = ex.reply.get("traceback", [])
        return ex

    def request(
        self, msg_type: str, content: dict | None = None, *, channel: str = "shell", timeout: float = 30
    ) -> dict:
        """Send any request (e.g. `debug_request` on control) and return its reply message."""
        chan = self.kc.control_channel if channel == "control" else self.kc.shell_channel
        msg = self.kc.session.msg(msg_type, content or {})
        chan.send(msg)
        getter = self.kc.get_control_msg if channel == "control" else self.kc.get_shell_msg
        deadline = time.monotonic() + timeout
        while True:
            reply = getter(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply

    def complete(self, code: str, cursor_pos: int | None = None) -> dict:
        msg_id = self.kc.complete(code, len(code) if cursor_pos is None else cursor_pos)
        return self._shell_reply(msg_id, 30)["content"]

    def inspect(self, code: str, cursor_pos: int | None = None, detail_level: int = 0) -> dict:
        msg_id = self.kc.inspect(code, len(code) if cursor_pos is None else cursor_pos, detail_level)
        return self._shell_reply(msg_id, 30)["content"]

    def is_complete(self, code: str) -> dict:
        msg_id = self.kc.is_complete(code)
        return self._shell_reply(msg_id, 30)["content"]

    # -- lifecycle ---------------------------------------------------------------------------------
    def interrupt(self) -> None:
        self.km.interrupt_kernel()

    def is_alive(self) -> bool:
        return self.km.is_alive()

    def restart(self, timeout: float = 60) -> None:
        self.km.restart_kernel(now=True)
        self.kc.wait_for_ready(timeout=timeout)

    def shutdown(self) -> None:
        self._stop(remove_cwd=True)

    def _stop(self, remove_cwd: bool) -> None:
        try:
            self.kc.stop_channels()
        finally:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=True)
            if remove_cwd and self._own_cwd:
                shutil.rmtree(self.cwd, ignore_errors=True)

    def __enter__(self) -> KernelHarness:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    # -- internals ---------------------------------------------------------------------------------
    def _shell_reply(self, msg_id: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no shell reply to {msg_id} within {timeout} s")
            try:
                reply = self.kc.get_shell_msg(timeout=remaining)
            except queue.Empty:
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    def _drain_iopub(self) -> None:
        while True:
            try:
                self.kc.get_iopub_msg(timeout=0.01)
            except queue.Empty:
                return


def ok(kernel: KernelHarness, code: str, timeout: float = 60) -> Execution:
    """Run `code`, which must succeed (a failure shows the code and the whole execution)."""
    ex = kernel.execute(code, timeout=timeout)
    assert ex.ok, (code, str(ex))
    return ex


def probe(kernel: KernelHarness, expr: str, timeout: float = 60) -> object:
    """The value of `expr`, printed as JSON by the kernel (whose namespace has `json` imported); the last
    line is read, as fan-out summaries from the widgets may be printed before it."""
    return json.loads(ok(kernel, f"print(json.dumps({expr}))", timeout).stdout.strip().splitlines()[-1])


@contextmanager
def kernel_with_llm_server(
    env_for: Callable[[Any], dict[str, str]],
) -> Iterator[tuple[Any, KernelHarness]]:
    """A local LLM test server and a real `rlm` kernel pointed at it; `env_for(server)` is its environment."""
    from tests.llm_server import LLMTestServer

    with LLMTestServer() as server:
        kernel = KernelHarness(env=env_for(server))
        try:
            yield server, kernel
        finally:
            kernel.shutdown()


@pytest.fixture(scope="module")
def rlm_kernel() -> Iterator[KernelHarness]:
    """One `rlm` kernel shared by the tests of a module."""
    harness = KernelHarness()
    try:
        yield harness
    finally:
        harness.shutdown()


@pytest.fixture
def rlm_kernel_factory() -> Iterator[Callable[..., KernelHarness]]:
    """Start extra kernels with their own env (`factory(env={...})`); all are shut down after the test."""
    started: list[KernelHarness] = []

    def factory(*args: Any, **kwargs: Any) -> KernelHarness:
        harness = KernelHarness(*args, **kwargs)
        started.append(harness)
        return harness

    try:
        yield factory
    finally:
        for harness in started:
            try:
                harness.shutdown()
            except Exception:  # noqa: BLE001 - best effort clean-up of every kernel
                pass
