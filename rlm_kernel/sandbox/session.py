"""Per-kernel sandbox state: limits, the session `Random`, import facades, output accounting, cancellation.

One `SandboxSession` per kernel (or per root loop); the namespace's guards are closures over it. It also holds
what used to be module state: the audit hook whose guard its cells run under (`audit`), what the OS layer
applied to the process (`confinement`, set by the launcher) and the value a helper last showed (`shown`), so
tests build a session instead of resetting modules.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import weakref
from pathlib import Path
from typing import Any, TextIO

from rlm_kernel.sandbox.audit import PROCESS_HOOK, AuditHook
from rlm_kernel.sandbox.confine import Status
from rlm_kernel.sandbox.facades import build_facades
from rlm_kernel.sandbox.guards import make_guards
from rlm_kernel.sandbox.imports import import_facade
from rlm_kernel.sandbox.limits import Limits
from rlm_kernel.sandbox.shown import Shown

__all__ = ["SandboxSession"]


class _CellThread(threading.local):
    """Per thread: is this thread inside `cell_limits` of the session? (False in every new thread.)"""

    in_cell = False


class _TaskOutput:
    """What one cooperative task's running block writes to: capture stack, output counts, shown value."""

    __slots__ = ("captures", "dropped", "shown", "used")

    def __init__(self, captures: list[TextIO], used: int, dropped: int, shown: Shown) -> None:
        self.captures, self.used, self.dropped, self.shown = captures, used, dropped, shown


class SandboxSession:
    """State shared by every cell of one kernel: never reachable from a cell (guards hold it in closures)."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        seed: int | None = None,
        backstop_marker: Path | str | None = None,
        audit: AuditHook | None = None,
    ) -> None:
        self.limits = limits if limits is not None else Limits.from_env()
        self.random = random.Random(seed if seed is not None else int.from_bytes(os.urandom(16), "big"))
        self.backstop_marker = backstop_marker
        # the audit hook whose guard `cell_limits` enters: the process's one unless a test brings its own
        self.audit = audit if audit is not None else PROCESS_HOOK
        # what the OS layer applied to this process (`confine.confine_process`), set by the launcher; None
        # when the kernel was not started by `python -m rlm_kernel`
        self.confinement: Status | None = None
        self.cancelled: str | None = None  # reason once the running cell hit a time limit
        self.active_depth = 0
        self.owner_thread: int | None = None  # thread running the active cell
        # `cell_thread.in_cell` is True in a thread while it runs restricted code under `cell_limits`: a
        # cell's code (functions, lambdas, finally/except blocks) refuses to run anywhere else (finalizers,
        # completion, other threads). A thread-local flag: one attribute read on the hot path.
        self.cell_thread = _CellThread()
        self.output_used = 0
        self.output_dropped = 0
        self.user_classes: weakref.WeakSet[type] = weakref.WeakSet()
        self.shown = Shown()  # the value a helper last showed (not shown again as the cell's value)
        self._local = threading.local()
        self.data_facades: dict[str, Any] | None = None  # numpy/pandas/matplotlib: built on first import
        self.guards: dict[str, Any] = make_guards(self)
        self.facades: dict[str, Any] = build_facades(self)

    def import_facade(self, name: str, fromlist: Any = (), level: int = 0) -> Any:
        """What `import` statements in a cell call: an allowlisted facade, or a refusal naming the list."""
        return import_facade(self, name, fromlist, level)

    # -- per-cell bookkeeping -------------------------------------------------------------------------------
    def begin_cell(self) -> None:
        """Reset cancellation and output accounting at the start of a cell."""
        self.cancelled = None
        self.output_used = 0
        self.output_dropped = 0

    def end_cell(self) -> None:
        """Write the "output truncated" note if the cell's output went over the cap."""
        if self.output_dropped:
            dropped, self.output_dropped = self.output_dropped, 0
            self.stdout().write(
                f"\n[output truncated: {dropped} bytes over the {self.limits.output_bytes}-byte "
                "limit per cell (RLM_OUTPUT_BYTES)]\n"
            )
        self.cancelled = None

    # -- output ---------------------------------------------------------------------------------------------
    def stdout(self) -> TextIO:
        """Where `print` writes: a capture buffer set by `run_source` in this thread, else `sys.stdout`."""
        stack = getattr(self._local, "captures", None)
        return stack[-1] if stack else sys.stdout

    def switch_output(self, state: object | None) -> object:
        """Install a cooperative task's output state and return the one it replaces (None: a new task's —
        the current capture stack copied, nothing counted yet, nothing shown).

        `rlm_query_batched` switches its sub-RLMs where they wait for a model (`rlm_kernel.cooperative`),
        so several blocks can be part-way through on the cell's thread; what a block prints, how much of its
        output allowance it used and the value a helper showed follow the task that runs."""
        current = _TaskOutput(self._captures(), self.output_used, self.output_dropped, self.shown)
        if not isinstance(state, _TaskOutput):
            state = _TaskOutput(list(current.captures), 0, 0, Shown())
        self._local.captures = state.captures
        self.output_used, self.output_dropped, self.shown = state.used, state.dropped, state.shown
        return current

    def _captures(self) -> list[TextIO]:
        stack = getattr(self._local, "captures", None)
        if stack is None:
            stack = self._local.captures = []
        return stack

    def push_capture(self, buffer: TextIO) -> None:
        """Send this thread's prints to `buffer` until `pop_capture`."""
        self._captures().append(buffer)

    def pop_capture(self) -> None:
        self._local.captures.pop()

    def printed_so_far(self) -> str:
        """What the block running in this thread has printed so far (its capture buffer's text; "" when
        its prints are not captured)."""
        stack = getattr(self._local, "captures", None)
        getvalue = getattr(stack[-1], "getvalue", None) if stack else None
        text = getvalue() if callable(getvalue) else ""
        return text if isinstance(text, str) else ""

    def write_output(self, text: str) -> None:
        """Write user output, counting it against the per-cell cap; the excess is dropped and counted."""
        cap = self.limits.output_bytes
        if not cap:
            self.stdout().write(text)
            return
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        room = cap - self.output_used
        if size <= room:
            self.output_used += size
            self.stdout().write(text)
            return
        if room > 0:
            kept = text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
            self.stdout().write(kept)
            self.output_used = cap
            self.output_dropped += size - room
        else:
            self.output_dropped += size

    def cap_mimebundle(self, data: dict[str, Any]) -> dict[str, Any]:
        """Apply the per-cell output cap to a display bundle (execute_result or display_data).

        A frontend shows one representation, so the bundle counts as its largest one. Within the cap it is
        returned unchanged; over it, only `text/plain` is kept, cut to the remaining room, with the
        "output truncated" note (rich representations cannot be cut safely).
        """
        cap = self.limits.output_bytes
        if not cap:
            return data
        sizes = {key: _size(value) for key, value in data.items()}
        largest = max(sizes.values(), default=0)
        room = cap - self.output_used
        if largest <= room:
            self.output_used += largest
            return data
        text = data.get("text/plain")
        text = text if isinstance(text, str) else ""
        kept = text.encode("utf-8", "surrogatepass")[: max(room, 0)].decode("utf-8", "ignore")
        self.output_used = cap
        dropped = largest - len(kept.encode("utf-8", "surrogatepass"))
        note = f"[output truncated: {dropped} bytes over the {cap}-byte limit per cell (RLM_OUTPUT_BYTES)]"
        return {"text/plain": f"{kept}\n{note}" if kept else note}

    # -- user classes ---------------------------------------------------------------------------------------
    def mark_user_class(self, cls: Any) -> Any:
        """Record a class defined by a cell (its instances accept attribute writes)."""
        if isinstance(cls, type):
            self.user_classes.add(cls)
        return cls

    def is_user_object(self, obj: Any) -> bool:
        """True for classes defined in a cell and their instances (including subclasses of builtins)."""
        classes = self.user_classes
        if type(obj) in classes:
            return True
        if isinstance(obj, type):
            return any(c in classes for c in obj.__mro__)
        return any(c in classes for c in type(obj).__mro__)


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return len(value)
    return len(repr(value))
