"""The MCP server's link to one `rlm` kernel: start it or attach to it, run a cell, collect what it sent,
interrupt it. Speaks the Jupyter protocol through jupyter_client's async client; knows nothing of MCP."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.connect import find_connection_file
from jupyter_client.manager import AsyncKernelManager

from rlm_kernel import KERNEL_NAME
from rlm_kernel.errors import RLMError

__all__ = ["AGENT_ORIGIN", "CellResult", "KernelLink", "NotAnRLMKernel"]

AGENT_ORIGIN = {"rlm": {"origin": "agent"}}
"""execute_request metadata that makes the kernel run the cell as model-written code (kernel.py)."""

IMPLEMENTATION = "rlm_kernel"  # kernel_info_reply's `implementation` of an rlm kernel
OnOutput = Callable[[str], Awaitable[None]]


class NotAnRLMKernel(RLMError):
    """The kernel to attach to is not an `rlm` kernel (its cells would run without the sandbox)."""


@dataclass
class CellResult:
    """What one execute_request produced, as the MCP tools return it."""

    status: str = "ok"
    stdout: str = ""
    stderr: str = ""
    result: str | None = None
    error: str | None = None
    images: list[tuple[str, bytes]] = field(default_factory=list)  # (mime type, bytes)
    displays: list[str] = field(default_factory=list)  # text/plain of display_data
    html: str | None = None  # the last text/html seen (the run viewer's timeline)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def text(self) -> str:
        """Everything textual, in the order a notebook shows it."""
        parts = [p for p in (self.stdout, self.stderr) if p]
        parts += self.displays
        if self.result is not None:
            parts.append(self.result)
        if self.error:
            parts.append(self.error)
        return "\n".join(p.rstrip("\n") for p in parts)


class KernelLink:
    """One kernel: `await KernelLink.start(cwd, env)` owns a new one; `KernelLink.attach(path)` joins one."""

    def __init__(self, client: AsyncKernelClient, manager: AsyncKernelManager | None) -> None:
        self.client = client
        self.manager = manager
        self._lock = asyncio.Lock()  # one request at a time: the kernel runs cells one after another
        # one reader per channel routes each message to the request it answers (by parent msg_id), so a
        # cancelled request still draining never takes the next one's messages; others' are dropped
        self._routes: dict[str, asyncio.Queue[tuple[str, dict[str, Any]]]] = {}
        self._readers: list[asyncio.Task[None]] = []
        self.connection_file: str | None = None  # set when attached

    def _start_readers(self) -> None:
        if not self._readers:
            self._readers = [
                asyncio.get_running_loop().create_task(self._read("iopub", self.client.get_iopub_msg)),
                asyncio.get_running_loop().create_task(self._read("shell", self.client.get_shell_msg)),
            ]

    async def _read(self, channel: str, get: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        while True:
            try:
                msg = await get()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a malformed message is dropped, the reader goes on
                continue
            route = self._routes.get(msg.get("parent_header", {}).get("msg_id", ""))
            if route is not None:
                route.put_nowait((channel, msg))

    # -- start / attach / stop ------------------------------------------------------------------------
    @classmethod
    async def start(
        cls,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        kernel_name: str = KERNEL_NAME,
        startup_timeout: float = 120,
    ) -> KernelLink:
        manager = AsyncKernelManager(kernel_name=kernel_name)
        # the kernel's own stdout would corrupt an MCP stream on this process's stdout: it goes to stderr
        environ = dict(os.environ) if env is None else env
        await manager.start_kernel(cwd=cwd, env=environ, stdout=sys.stderr, stdin=subprocess.DEVNULL)
        client = manager.client()
        client.start_channels()
        link = cls(client, manager)
        try:
            await client.wait_for_ready(timeout=startup_timeout)
            await link.check_rlm()
        except BaseException:
            await link.close()
            raise
        return link

    @classmethod
    async def attach(cls, connection_file: str | None = None, *, timeout: float = 30) -> KernelLink:
        """Join a running kernel by its connection file (None: the newest one of this user)."""
        path = find_connection_file(connection_file or "kernel-*.json")
        client = AsyncKernelClient()
        client.load_connection_file(path)
        client.start_channels()
        link = cls(client, None)
        try:
            await client.wait_for_ready(timeout=timeout)
            await link.check_rlm()
        except BaseException:
            client.stop_channels()
            raise
        link.connection_file = str(Path(path).resolve())
        return link

    async def check_rlm(self) -> None:
        reply = await self.client.kernel_info(reply=True, timeout=30)
        implementation = reply["content"].get("implementation")
        if implementation != IMPLEMENTATION:
            raise NotAnRLMKernel(
                f"the kernel is {implementation!r}, not an rlm kernel: its cells would run without the "
                "sandbox, so this server refuses it (start one with `jupyter console --kernel rlm`)"
            )

    async def close(self) -> None:
        for reader in self._readers:
            reader.cancel()
        self.client.stop_channels()
        if self.manager is not None and await self.manager.is_alive():
            await self.manager.shutdown_kernel(now=True)

    # -- running cells --------------------------------------------------------------------------------
    async def execute(
        self, code: str, *, agent: bool, on_output: OnOutput | None = None, timeout: float | None = None
    ) -> CellResult:
        """Run `code`; `agent=True` marks it as the agent's (run as model-written code). Cancelling the
        awaiting task interrupts the kernel (its model calls are cancelled with the cell) and waits, briefly,
        for the cell to end."""
        async with self._lock:
            self._start_readers()
            content = {
                "code": code,
                "silent": False,
                "store_history": not agent,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": False,
            }
            msg = self.client.session.msg("execute_request", content, metadata=AGENT_ORIGIN if agent else {})
            msg_id = msg["header"]["msg_id"]
            self._routes[msg_id] = asyncio.Queue()
            self.client.shell_channel.send(msg)
            draining = False
            try:
                return await asyncio.wait_for(self._collect(msg_id, on_output), timeout)
            except (asyncio.CancelledError, TimeoutError):
                draining = True  # the drain owns the route until the cell has ended
                drain = asyncio.ensure_future(self._interrupt_and_drain(msg_id))
                drain.add_done_callback(lambda _t: self._routes.pop(msg_id, None))
                await asyncio.shield(drain)
                raise
            finally:
                if not draining:
                    self._routes.pop(msg_id, None)

    async def _collect(self, msg_id: str, on_output: OnOutput | None) -> CellResult:
        out = CellResult()
        idle = False
        reply: dict[str, Any] | None = None
        route = self._routes[msg_id]
        while not idle or reply is None:
            channel, msg = await route.get()
            if channel == "shell":
                reply = msg["content"]
                continue
            idle = self._absorb(out, msg) or idle
            if on_output is not None and msg["msg_type"] in ("stream", "display_data", "update_display_data"):
                await on_output(_progress_text(msg))
        out.status = reply.get("status", "error")
        if out.status != "ok" and out.error is None:
            out.error = f"{reply.get('ename', 'Error')}: {reply.get('evalue', '')}"
        return out

    @staticmethod
    def _absorb(out: CellResult, msg: dict[str, Any]) -> bool:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status":
            return content.get("execution_state") == "idle"
        if kind == "stream":
            if content.get("name") == "stderr":
                out.stderr += content.get("text", "")
            else:
                out.stdout += content.get("text", "")
        elif kind in ("execute_result", "display_data", "update_display_data"):
            data = content.get("data", {})
            for mime in ("image/png", "image/jpeg"):
                if mime in data:
                    out.images.append((mime, base64.b64decode(data[mime])))
            if "text/html" in data:
                out.html = data["text/html"]
            text = data.get("text/plain")
            if text is not None:
                if kind == "execute_result":
                    out.result = text
                elif kind == "display_data":
                    out.displays.append(text)
        elif kind == "error":
            trace = "\n".join(content.get("traceback", [])[-3:])
            out.error = _strip_ansi(trace) or f"{content.get('ename')}: {content.get('evalue')}"
        return False

    async def interrupt(self) -> None:
        if self.manager is not None:
            await self.manager.interrupt_kernel()
        else:  # attached: ask the kernel itself (ipykernel answers interrupt_request on the control channel)
            msg = self.client.session.msg("interrupt_request", {})
            self.client.control_channel.send(msg)

    async def _interrupt_and_drain(self, msg_id: str, grace: float = 10.0) -> None:
        await self.interrupt()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(self._collect(msg_id, None), grace)


def _progress_text(msg: dict[str, Any]) -> str:
    content = msg["content"]
    text = content.get("text") or content.get("data", {}).get("text/plain", "")
    lines = [line for line in str(text).splitlines() if line.strip()]
    return lines[-1][:200] if lines else msg["msg_type"]


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)
