"""Kernel output for widgets: display/write into a given cell from any thread (ipykernel 7 thread parents).

`KernelSink(shell)` resolves a fan-out's `owner` (the starting cell's msg_id) to that cell's parent message.
"""

from __future__ import annotations

import sys
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rlm_kernel.llm.events import current_parent
from rlm_kernel.output import kernel_display, kernel_update

__all__ = ["KernelSink", "current_parent_message"]

_MAX_PARENTS = 64


def current_parent_message(shell: Any) -> dict[str, Any]:
    """The running cell's parent message: the rlm kernel's `current_parent()`, else ipykernel's own."""
    parent = current_parent()
    if parent:
        return parent
    kernel = getattr(shell, "kernel", None)
    if kernel is not None:
        try:
            return kernel.get_parent("shell") or {}
        except TypeError:
            return kernel.get_parent() or {}
    return {}


def _msg_id(parent: dict[str, Any]) -> str | None:
    header = parent.get("header") if isinstance(parent.get("header"), dict) else parent
    value = header.get("msg_id") if isinstance(header, dict) else None
    return str(value) if value else None


class KernelSink:
    """Routes fan-out output to the cell that started the batch, whichever thread the events arrive on."""

    def __init__(self, shell: Any, stdout: Any = None) -> None:
        self.shell = shell
        self._stdout = stdout or sys.stdout  # the kernel's own stream, whatever a cell redirects later
        self._parents: OrderedDict[str, dict[str, Any]] = OrderedDict()
        events = getattr(shell, "events", None)
        if events is not None:
            events.register("pre_run_cell", self._remember_cell)

    def _remember_cell(self, *_args: Any) -> None:
        self._remember(current_parent_message(self.shell))

    def _remember(self, parent: dict[str, Any]) -> None:
        msg_id = _msg_id(parent)
        if msg_id:
            self._parents[msg_id] = parent
            self._parents.move_to_end(msg_id)
            while len(self._parents) > _MAX_PARENTS:
                self._parents.popitem(last=False)

    def parent_for(self, owner: str | None) -> dict[str, Any]:
        current = current_parent_message(self.shell)
        self._remember(current)
        if owner and owner in self._parents:
            return self._parents[owner]
        return current

    @contextmanager
    def _in_cell(self, parent: dict[str, Any]) -> Iterator[None]:
        setter = getattr(self.shell, "set_thread_parent", None)
        if not parent or setter is None:
            yield
            return
        tokens = setter(parent)
        try:
            yield
        finally:
            self.shell.reset_thread_parent(tokens)

    def show(self, widget: Any, parent: dict[str, Any], fallback: str = "") -> str:
        """Display `widget` in the cell with `fallback` as its text/plain (not the widget's long repr);
        returns the display id `finish` updates."""
        display_id = uuid.uuid4().hex
        bundle = dict(widget._repr_mimebundle_() or {})
        if fallback:
            bundle["text/plain"] = fallback
        with self._in_cell(parent):
            kernel_display(bundle, display_id=display_id)
        return display_id

    def finish(self, widget: Any, parent: dict[str, Any], handle: str, summary: str) -> None:
        """Give the display `handle` the one-line summary as its text/plain, keeping the widget view."""
        bundle = dict(widget._repr_mimebundle_() or {})
        bundle["text/plain"] = summary
        with self._in_cell(parent):
            kernel_update(bundle, handle)

    def write(self, text: str, parent: dict[str, Any]) -> None:
        stream = self._stdout
        with self._in_cell(parent):
            setter = getattr(stream, "set_thread_parent", None)
            token = setter(parent) if setter is not None and parent else None
            try:
                stream.write(text + "\n")
            finally:
                if token is not None:
                    stream.reset_thread_parent(token)
        stream.flush()
