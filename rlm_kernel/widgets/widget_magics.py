"""Widgets in the kernel: `%rlm budget`, `%rlm display`, start-up wiring (fan-out controller, widget comms).

The shell imports this module and calls `install(shell)` at start; `install()` is idempotent and also
callable from a stock IPython kernel.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from IPython import get_ipython
from IPython.core.error import UsageError

from rlm_kernel.magics import register_rlm_subcommand
from rlm_kernel.widgets.budget import BudgetDisplay, get_monitor, register_displays
from rlm_kernel.widgets.controller import FanoutController
from rlm_kernel.widgets.display_mode import MODES, register_setting, resolve_mode
from rlm_kernel.widgets.kernel_sink import KernelSink

__all__ = ["DisplayStatus", "budget_command", "display_command", "install"]

_lock = threading.Lock()
_controller: FanoutController | None = None


def install(shell: Any = None) -> FanoutController:
    """Subscribe the fan-out controller and budget monitor to the event bus; make widgets work (idempotent).

    Registers ipywidgets' comm targets explicitly: the shell imports this module while it is still being
    built, when ipywidgets' own import-time registration cannot find it, and a widget frontend needs the
    `jupyter.widget.control` target to connect (which is also how `auto` display mode detects it).
    """
    global _controller
    with _lock:
        if _controller is not None:
            return _controller
        import ipywidgets

        ipywidgets.register_comm_target()
        register_setting()
        if shell is None:
            shell = get_ipython()
        if shell is not None:
            register_displays(shell)
        _controller = FanoutController(_LazySink(shell)).subscribe()
        get_monitor()
        return _controller


class _LazySink:
    """A `KernelSink` created on first use: the shell may still be under construction at import time."""

    def __init__(self, shell: Any) -> None:
        self._shell = shell
        self._stdout = sys.stdout  # captured at kernel start, before any cell runs
        self._sink: Any = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        with self._lock:
            if self._sink is None:
                self._sink = KernelSink(self._shell or get_ipython(), self._stdout)
            return self._sink

    def parent_for(self, owner: str | None) -> Any:
        return self._get().parent_for(owner)

    def show(self, widget: Any, parent: Any, fallback: str = "") -> Any:
        return self._get().show(widget, parent, fallback)

    def finish(self, widget: Any, parent: Any, handle: Any, summary: str) -> None:
        self._get().finish(widget, parent, handle, summary)

    def write(self, text: str, parent: Any) -> None:
        self._get().write(text, parent)


def budget_command(line: str) -> BudgetDisplay:
    """`%rlm budget [text|widgets]` — the session budget: calls, tokens and USD against its caps, live."""
    arg = line.strip().lower()
    if arg not in ("", "text", "widgets"):
        raise UsageError(f"%rlm budget: unexpected {line.strip()!r}; use `%rlm budget`, `%rlm budget text`")
    return BudgetDisplay(mode=arg or None)


class DisplayStatus:
    """What `%rlm display` shows: the effective mode and where it came from."""

    def __init__(self, mode: str, source: str) -> None:
        self.mode, self.source = mode, source

    def __repr__(self) -> str:
        return (
            f"display: {self.mode} ({self.source}); change with `%rlm set display=auto|off|text|widgets` "
            "or RLM_DISPLAY"
        )


def display_command(line: str) -> DisplayStatus:
    """`%rlm display` — how fan-outs and budgets are shown (off, text, widgets) and why."""
    if line.strip():
        raise UsageError(
            f"%rlm display takes no arguments; set it with `%rlm set display=...` ({', '.join(MODES)})"
        )
    try:
        return DisplayStatus(*resolve_mode())
    except ValueError as exc:
        raise UsageError(f"%rlm display: {exc}") from None


def _register() -> None:
    register_rlm_subcommand("budget", budget_command, "the session budget, live: calls, tokens, USD vs caps")
    register_rlm_subcommand("display", display_command, "how fan-outs/budgets show: off, text or widgets")


_register()
