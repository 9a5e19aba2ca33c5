"""ipywidgets, imported when the first widget is built or a frontend first opens a widget comm.

Importing ipywidgets costs ~50 ms, paid by every kernel start when it was imported at start. It is loaded
as kernel work a running cell's limits do not count (`uncounted`). `register_comm_targets` answers the
frontend's `jupyter.widget` / `jupyter.widget.control` comms at once and imports ipywidgets on the first one.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from rlm_kernel.sandbox.limits import uncounted

__all__ = ["imported", "ipywidgets", "register_comm_targets"]


def imported() -> bool:
    """Whether ipywidgets is loaded in this process (without loading it)."""
    return "ipywidgets" in sys.modules


def ipywidgets() -> ModuleType:
    """The ipywidgets module, imported on first use."""
    module = sys.modules.get("ipywidgets")
    if module is not None and hasattr(module, "register_comm_target"):
        return module
    with uncounted():
        import ipywidgets as module
    return module


def _opener(handler: str) -> Any:
    def opened(comm: Any, msg: Any) -> Any:
        widgets = ipywidgets()
        widgets.register_comm_target()  # ipywidgets' own handlers take the targets from now on
        return getattr(widgets.Widget, handler)(comm, msg)

    return opened


def register_comm_targets() -> None:
    """Register ipywidgets' comm targets in this kernel without importing ipywidgets yet."""
    if imported():
        ipywidgets().register_comm_target()
        return
    import comm

    manager = comm.get_comm_manager()
    if manager is None:
        return
    manager.register_target("jupyter.widget", _opener("handle_comm_opened"))
    manager.register_target("jupyter.widget.control", _opener("handle_control_comm_opened"))
