"""Figures shown inline: PNG rendering (Agg), `plt.show()`, and the end-of-cell flush of open figures.

Rendering runs on the cell's thread under its limits (the shell flushes before `cell_limits` ends), so a
cell's tick formatters or filters run where cell code may run; the PNG goes out as a display bundle, counted
against the per-cell output cap like every other display.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

from rlm_kernel.output.trust import mark_model_made
from rlm_kernel.sandbox.made import made
from rlm_kernel.sandbox.origin import register_display_path

if TYPE_CHECKING:
    from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["figure_bundle", "flush_figures", "register_formatter", "show"]


def figure_bundle(fig: Any) -> dict[str, Any]:
    """The display bundle of a figure: PNG (base64) and a text description."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return {"image/png": base64.b64encode(buffer.getvalue()).decode("ascii"), "text/plain": repr(fig)}


def _publish(session: SandboxSession, bundle: dict[str, Any], by_model: bool = False) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    if InteractiveShell.initialized():
        from IPython.display import display

        # a figure model-written code made (sandbox/made.py) is framed as its output, whoever shows it
        display(bundle, raw=True, metadata=mark_model_made() if by_model else None)
    else:  # run_source outside a kernel (root loop blocks): a line of text says what was drawn
        session.write_output(f"{bundle['text/plain']} (shown as an image in the notebook)\n")


MAX_FIGURES = 50  # figures shown by one show() or end-of-cell flush; the rest are closed with a note


def show(session: SandboxSession) -> None:
    """`plt.show()`: display every open figure as PNG, then close them (as the inline backend does).

    Stops early once the cell is out of time (the timers only mark it: no cell frame is on the stack while
    the kernel flushes) and after MAX_FIGURES figures, saying how many were not drawn."""
    import matplotlib.pyplot as plt

    numbers = plt.get_fignums()
    shown = 0
    try:
        for num in numbers:
            if session.cancelled is not None or shown >= MAX_FIGURES:
                break
            fig = plt.figure(num)
            _publish(session, figure_bundle(fig), made(fig))
            shown += 1
    finally:
        plt.close("all")
    if shown < len(numbers):
        why = (
            "the cell ran out of time"
            if session.cancelled is not None
            else f"at most {MAX_FIGURES} are shown"
        )
        # the kernel's own note (one short line), not the cell's output: written past the output cap
        session.stdout().write(f"[{len(numbers) - shown} more figures were not drawn: {why}]\n")


def flush_figures(session: SandboxSession) -> None:
    """At the end of a cell: show the figures it left open (plot calls without `plt.show()`).

    A figure that cannot be drawn is reported in one line; the figures are closed either way.
    """
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or not plt.get_fignums():
        return
    if session.cancelled is not None:
        plt.close("all")
        return
    try:
        show(session)
    except Exception as exc:  # noqa: BLE001 - a figure that fails to draw must not fail the kernel
        session.write_output(f"the figure could not be drawn: {type(exc).__name__}: {str(exc)[:300]}\n")


register_display_path(show.__code__, _publish.__code__)  # plt.show() forwards to display()


def register_formatter(session: SandboxSession) -> None:
    """A figure as a cell's last value is shown as PNG (and closed, so the end-of-cell flush skips it)."""
    from IPython.core.interactiveshell import InteractiveShell

    if not InteractiveShell.initialized():
        return
    shell = InteractiveShell.instance()
    from matplotlib.figure import Figure

    def png(fig: Any) -> str:
        import matplotlib.pyplot as plt

        data = figure_bundle(fig)["image/png"]
        plt.close(fig)
        return data

    shell.display_formatter.formatters["image/png"].for_type(Figure, png)
