"""The rlm Jupyter kernel: ipykernel's IPythonKernel wired to the sandboxed `RLMShell`.

Wiring only: the debugger is refused, completion follows the sandbox's rules, and the running cell's parent
message is recorded for output from background threads (`llm.events.current_parent()`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import types
from typing import Any

from ipykernel.ipkernel import IPythonKernel
from traitlets import Type

from rlm_kernel import __version__, introspect, magics, security_magic
from rlm_kernel.callscope import call_scope
from rlm_kernel.cell_errors import error_budget, error_parts
from rlm_kernel.llm import event_loop as llm_loop
from rlm_kernel.llm.events import current_parent, set_current_parent
from rlm_kernel.output import clean_bundle
from rlm_kernel.repl import preload
from rlm_kernel.rootloop.bindings import Bindings, note
from rlm_kernel.sandbox import audit, cell_limits, consume_backstop_note
from rlm_kernel.sandbox.origin import model_code
from rlm_kernel.shell import RLMCompiler, RLMShell

__all__ = ["RLMKernel", "current_parent", "sent_by_agent"]

BANNER = (
    f"RLM kernel {__version__} — a Recursive Language Model REPL on Python {sys.version.split()[0]}.\n"
    "Every cell runs in a RestrictedPython sandbox: no shell, no direct file or network access, no\n"
    "private attributes. Read data with load_context(), ask models with llm_query(); see %rlm help."
)


class _Version:
    """What `%rlm version` shows: the package version, as the banner and the wheel's metadata give it."""

    def __repr__(self) -> str:
        return f"rlm-kernel {__version__}"


magics.register_rlm_subcommand(
    "version", lambda _line: _Version(), "the rlm-kernel version, as in the banner"
)

_AGENT_BOUND: dict[str, str] = {}  # names MCP agents' cells bound in the notebook, by what they did


class _AgentBound:
    """What `%rlm agent` shows: the names MCP agents' cells (model-written code) bound in the notebook."""

    def __repr__(self) -> str:
        return note(_AGENT_BOUND).replace("model-written code", "MCP agent cells (model-written code)") or (
            "no MCP agent cell has bound a name in this notebook"
        )


magics.register_rlm_subcommand(
    "agent", lambda _line: _AgentBound(), "names MCP agents' cells bound in the notebook (model-written code)"
)


def sent_by_agent(parent: dict[str, Any]) -> bool:
    """True for an execute_request an agent sent through `rlm-kernel mcp` (metadata `{"rlm": {"origin":
    "agent"}}`). The mark only ever lowers trust, so the kernel believes whoever sets it."""
    metadata = parent.get("metadata")
    mark = metadata.get("rlm") if isinstance(metadata, dict) else None
    return isinstance(mark, dict) and mark.get("origin") == "agent"


def _cancel_model_calls() -> None:
    """Cancel every model call in flight or queued (signal-safe; nothing to do if no call was ever made)."""
    try:
        llm_loop.cancel_all_soon()
    except Exception:  # noqa: BLE001 - the interrupt itself must still be raised
        pass


def _interrupt(signum: int, frame: Any) -> None:
    """SIGINT while a request runs: stop the model calls (also those other threads wait on), then raise
    KeyboardInterrupt in the main thread as ipykernel's default handler does."""
    _cancel_model_calls()
    raise KeyboardInterrupt


def _without_debugger() -> None:
    """Tell ipykernel that no debugger is available, without importing it.

    IPythonKernel imports `ipykernel.debugger` (and with it debugpy and pydevd, ~0.1 s) in every kernel's
    `__init__` only to learn whether debugpy can be used; this kernel refuses the debugger (`debugger = None`,
    `do_debug_request`), so it answers that question itself: a module saying debugpy is not available.
    A process that imported the real module already keeps it."""
    if "ipykernel.debugger" in sys.modules:
        return
    module = types.ModuleType("ipykernel.debugger", "No debugger in the rlm kernel (see rlm_kernel.kernel).")
    module._is_debugpy_available = False  # type: ignore[attr-defined]
    sys.modules["ipykernel.debugger"] = module


COMM_TRAFFIC_FACTOR = 20  # comm (widget) bytes a cell may send: this many times RLM_OUTPUT_BYTES …
COMM_TRAFFIC_FLOOR = 20_000_000  # … but never less than this (the kernel's own widgets must keep working)


def _install_comm_cap(session: Any) -> None:
    """Cap what comm messages (widget state: `value`, `children` …) send while a cell runs: all of a cell's
    at most COMM_TRAFFIC_FACTOR x RLM_OUTPUT_BYTES (at least COMM_TRAFFIC_FLOOR); the rest is dropped and
    counted in the cell's "output truncated" note. Outside cells (frontend requests) nothing changes."""
    import json

    from ipykernel.comm.comm import BaseComm

    real = BaseComm.publish_msg
    if getattr(real, "_rlm_capped", False):
        return
    traffic: dict[str, Any] = {"cell": None, "bytes": 0}

    def publish_msg(
        self: Any, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> Any:
        cap = session.limits.output_bytes
        if cap and session.active_depth:
            try:
                size = len(json.dumps(data, default=str)) + sum(len(memoryview(b)) for b in buffers or ())
            except (TypeError, ValueError):
                size = cap + 1
            cell = current_parent().get("header", {}).get("msg_id")
            if traffic["cell"] != cell:
                traffic["cell"], traffic["bytes"] = cell, 0
            if traffic["bytes"] + size > max(cap * COMM_TRAFFIC_FACTOR, COMM_TRAFFIC_FLOOR):
                session.output_dropped += size
                return None
            traffic["bytes"] += size
        return real(self, msg_type, data, metadata, buffers, **keys)

    publish_msg._rlm_capped = True  # type: ignore[attr-defined]
    BaseComm.publish_msg = publish_msg  # type: ignore[method-assign]


class RLMKernel(IPythonKernel):
    """IPythonKernel whose cells, user_expressions, completion and inspection all pass the sandbox."""

    implementation = "rlm_kernel"
    implementation_version = __version__
    shell_class = Type(RLMShell)
    compiler_class = Type(RLMCompiler)
    debugger_class = Type(None, allow_none=True)  # no debugger (see _without_debugger)
    help_links = [{"text": "Python Reference", "url": "https://docs.python.org/3/"}]

    def __init__(self, **kwargs: Any) -> None:
        _without_debugger()
        audit.install()  # the second line while cells run (rlm_kernel/sandbox/audit.py); never removed
        super().__init__(**kwargs)
        self.debugger = None
        _install_comm_cap(self.shell.sandbox_session)
        marker = self.shell.sandbox_session.backstop_marker
        self._restart_note = consume_backstop_note(marker) if marker else None

    async def _progressively_terminate_all_children(self) -> None:
        """ipykernel lists the kernel's children through /proc at shutdown; under the OS layer /proc is not
        readable (Landlock), which ipykernel would log as an error with a traceback. The kernel's only
        children — the broker's supervisor and its brokers — exit on their own when its socket closes."""
        try:
            await super()._progressively_terminate_all_children()
        except PermissionError:
            pass

    @property
    def banner(self) -> str:  # type: ignore[override]
        """The fixed text, plus the LLM layer's note when the offline model is (or should be) in use."""
        try:
            from rlm_kernel.llm.local import banner_note

            note = banner_note()
        except Exception:  # noqa: BLE001 - the banner must never fail
            note = None
        text = f"{BANNER}\n{note}" if note else BANNER
        return f"{text}\n{security_magic.banner_lines(self.shell.sandbox_session.confinement)}"

    @property
    def kernel_info(self) -> dict[str, Any]:
        info = dict(super().kernel_info)
        info["supported_features"] = [f for f in info.get("supported_features", []) if f != "debugger"]
        return info

    async def do_execute(self, code: str, silent: bool, *args: Any, **kwargs: Any) -> dict[str, Any]:
        set_current_parent(self.get_parent("shell") or {})
        if self._restart_note:
            note, self._restart_note = self._restart_note, None
            print(note, file=sys.stderr, flush=True)
        parent = current_parent()
        owner = parent.get("header", {}).get("msg_id") or parent.get("msg_id")
        agent = sent_by_agent(parent)
        if agent:  # user_expressions are evaluated outside the cell: none for an agent (passed as kwargs)
            kwargs["user_expressions"] = {}
            args = args[:1]
        ns = self.shell.user_ns
        before = dict(ns) if agent else {}
        self.shell.watch_writes = agent  # the attributes and items it sets on the person's objects
        with call_scope(owner=owner), model_code() if agent else contextlib.nullcontext():
            # the model calls this cell makes are tagged (and cancelled) as its own; an agent's cell runs as
            # model-written code (origin.model_code: no magics, settings or secrets)
            try:
                reply = await super().do_execute(code, silent, *args, **kwargs)
            finally:
                self.shell.watch_writes, log = False, self.shell.last_writes
                self.shell.last_writes = None
            if agent:
                # as after a --shared run's block: builtins it shadowed (`len = ...`, which would run the
                # agent's code on the person's data in every later cell) are removed, its names and the
                # attributes it set on the person's objects recorded, the objects it left framed when shown
                bound = Bindings(preload.protected(ns), _AGENT_BOUND)
                for line in bound.after(ns, before, log):
                    print(line, flush=True)
                bound.finish(ns, last_block_only=True)
        limit = self.shell.sandbox_session.limits.output_bytes
        for payload in reply.get("payload", []) if isinstance(reply, dict) else ():
            if isinstance(payload, dict) and "data" in payload:  # `x??`'s pager text
                payload["data"] = introspect.cap_bundle(payload["data"], limit)
        return reply

    def pre_handler_hook(self) -> None:
        """As ipykernel's (an interrupt raises KeyboardInterrupt in the running request), and the interrupt
        also cancels the model calls in flight, so calls waited on by other threads (sub-RLMs) stop too."""
        super().pre_handler_hook()  # saves the idle handler for post_handler_hook to restore
        signal.signal(signal.SIGINT, _interrupt)

    def dispatch_debugpy(self, msg: Any) -> None:
        """No debugger: frames from debugpy are dropped."""

    async def poll_stopped_queue(self) -> None:
        """No debugger: nothing ever stops."""

    async def do_debug_request(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The debugger can evaluate arbitrary code, so every debug request is refused."""
        return {
            "type": "response",
            "request_seq": msg.get("seq", 0),
            "success": False,
            "command": msg.get("command", ""),
            "message": "the debugger is not available in the rlm kernel (it would bypass the sandbox)",
            "body": {},
        }

    def do_history(self, hist_access_type: str, output: bool, raw: bool, *args: Any, **kwargs: Any) -> dict:
        """As IPython's, but entries of the current session carry its number (IPython reports them as 0)."""
        reply = super().do_history(hist_access_type, output, raw, *args, **kwargs)
        number = self.shell.history_manager.session_number
        reply["history"] = [(session or number, line, entry) for session, line, entry in reply["history"]]
        return reply

    def do_inspect(self, code: str, cursor_pos: int, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Shift-Tab help: a guarded lookup (RLMShell._ofind); the reprs it calls run under cell limits."""
        try:
            with cell_limits(self.shell.sandbox_session):
                try:
                    reply = super().do_inspect(code, cursor_pos, *args, **kwargs)
                except Exception as exc:  # noqa: BLE001 - a cell's repr raised: its text, under the limits
                    name, text = error_parts(exc, error_budget(self.shell.sandbox_session))
                    return {"status": "error", "ename": name, "evalue": text, "traceback": []}
            limit = self.shell.sandbox_session.limits.output_bytes
            if isinstance(reply, dict) and isinstance(reply.get("data"), dict):
                # cut to the cap first, then cleaned like a display (docstrings are cell-made)
                reply["data"] = introspect.cap_bundle(reply["data"], limit)
                reply["data"], reply["metadata"] = clean_bundle(reply["data"])
            return reply
        except BaseException as exc:  # noqa: BLE001 - a time limit or interrupt in a user repr: reply, don't die
            return {"status": "error", "ename": type(exc).__name__, "evalue": str(exc), "traceback": []}

    def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:
        shell = self.shell
        magic_names = (list(magics.allowed_line_magics()), list(magics.allowed_cell_magics()))
        try:
            reply = introspect.complete(shell.user_ns, shell.user_ns_hidden, code, cursor_pos, magic_names)
            return introspect.cap_matches(reply, shell.sandbox_session.limits.output_bytes)
        except Exception as exc:  # noqa: BLE001 - completion must always answer
            self.log.warning("completion failed: %s", exc)
            end = len(code) if cursor_pos is None else cursor_pos
            return {"matches": [], "cursor_start": end, "cursor_end": end, "metadata": {}, "status": "ok"}
