"""What the guards may hand a cell: the types that lead out of the sandbox, and the check values pass.

`ValueCheck()(value, what)` returns `value` unless it is a module, frame, code object, traceback, coroutine,
or an object of a class that reaches the event loop, threads, sockets, files, the shell, the kernel, its
sessions or an HTTP client; then it raises a refusal naming `what` led there. Every guard that hands out a
value it did not make (`_getattr_`, `_getitem_`, the data attributes) passes it through one.
"""

from __future__ import annotations

import io
import sys
import types
from typing import Any

from rlm_kernel.sandbox.errors import refusal
from rlm_kernel.sandbox.safe_int import CELL_CLASSES

__all__ = ["DENIED_TYPES", "PLAIN", "ValueCheck"]

# Objects a cell must never hold: modules, frames, code, tracebacks, coroutines, loops, files, threads.
DENIED_TYPES: frozenset[type] = frozenset(
    {
        types.ModuleType,
        types.FrameType,
        types.TracebackType,
        types.CodeType,
        types.CoroutineType,
        types.AsyncGeneratorType,
        types.CellType,
    }
)


def _denied_bases() -> tuple[type, ...]:
    """Base classes of objects that lead out of the sandbox (imported lazily)."""
    import asyncio
    import concurrent.futures
    import socket
    import threading

    bases: list[type] = [
        asyncio.Future,
        asyncio.AbstractEventLoop,
        asyncio.BaseTransport,
        asyncio.StreamReader,
        asyncio.StreamWriter,
        concurrent.futures.Future,
        concurrent.futures.Executor,
        threading.Thread,
        socket.socket,
        io.IOBase,
        types.ModuleType,
    ]
    for mod, names in (
        ("httpx", ("Client", "AsyncClient", "Request", "Response")),
        ("aiohttp", ("ClientSession",)),
        ("IPython.core.interactiveshell", ("InteractiveShell",)),
        ("ipykernel.kernelbase", ("Kernel",)),
        ("ipykernel.iostream", ("OutStream", "IOPubThread")),
        ("comm.base_comm", ("BaseComm", "CommManager")),
        ("jupyter_client.session", ("Session",)),
        ("zmq", ("Socket", "Context")),
        ("traitlets.config.application", ("Application",)),
    ):
        module = sys.modules.get(mod)
        for name in names:
            cls = getattr(module, name, None) if module is not None else None
            if isinstance(cls, type):
                bases.append(cls)
    return tuple(bases)


_ALLOWED_IO = (io.StringIO, io.BytesIO)

# Value types returned without further checks (the hot path of attribute reads).
PLAIN = frozenset(
    {
        int,
        float,
        str,
        bool,
        type(None),
        bytes,
        list,
        tuple,
        dict,
        set,
        frozenset,
        types.BuiltinFunctionType,
        types.MethodType,
        types.FunctionType,
        complex,
    }
)


class ValueCheck:
    """Refuses values that lead out of the sandbox (one per session: it caches the denied base classes)."""

    __slots__ = ("bases", "modules")

    def __init__(self) -> None:
        self.bases = _denied_bases()
        self.modules = len(sys.modules)

    def __call__(self, value: Any, what: str) -> Any:
        kind = type(value)
        if kind in PLAIN:
            return value
        if kind is type and value in CELL_CLASSES:  # the real int (json's parse_int …): the checked one
            return CELL_CLASSES[value]
        if len(sys.modules) != self.modules:  # e.g. the LLM layer imported httpx since: recompute
            self.bases, self.modules = _denied_bases(), len(sys.modules)
        bases = self.bases
        if kind in DENIED_TYPES or (isinstance(value, bases) and not isinstance(value, _ALLOWED_IO)):
            raise refusal(f"{what} leads to a {kind.__name__} object, which the sandbox does not hand out")
        return value
