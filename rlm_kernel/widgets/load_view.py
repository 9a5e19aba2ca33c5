"""The corpus-load widget: a progress bar of files read (of those found) with a line of files, bytes,
skipped and seconds; its bar turns green when the load is done, orange when files were skipped or the load
was interrupted.

`LoadView.update(...)` sets only the traits whose value changed, so an update sends little on the comm.
"""

from __future__ import annotations

import html

from rlm_kernel.widgets.lib import ipywidgets

__all__ = ["LoadView", "load_line"]


def load_line(note: str, files: int, total: int | None, size: int, skipped: int, seconds: float) -> str:
    """`loading … doc0042.pdf: 812 of 1,500 files, 43.1 MB, 3 skipped, 6.2 s` (the widget's text, and
    the line a frontend without widgets shows)."""
    of = f" of {total:,}" if total else ""
    return f"{note}: {files:,}{of} files, {size / 1e6:,.1f} MB, {skipped:,} skipped, {seconds:.1f} s"


class LoadView:
    """ipywidgets view of one corpus load. `widget` is the box to display."""

    def __init__(self, total: int | None) -> None:
        w = ipywidgets()
        self.title = w.HTML("<b>load_context</b>", layout=w.Layout(min_width="8em"))
        self.bar = w.IntProgress(value=0, min=0, max=max(1, total or 1), layout=w.Layout(width="40%"))
        self.bar.add_class("rlm-load-bar")
        self.bar.bar_style = "info"
        self.line = w.HTML("")
        self.line.add_class("rlm-load-line")
        self.widget = w.VBox([w.HBox([self.title, self.bar]), self.line], layout=w.Layout(margin="2px 0"))
        self.widget.add_class("rlm-load-progress")

    def update(self, text: str, files: int, total: int | None, *, ended: str = "", skipped: int = 0) -> None:
        """Show `text` (escaped: file names come from the corpus) and `files` of `total` on the bar;
        `ended` ("loaded", "interrupted", …) gives the bar its final colour."""
        top = max(1, total or files)
        if self.bar.max != top:
            self.bar.max = top
        value = min(files, top)
        if self.bar.value != value:
            self.bar.value = value
        style = "info"
        if ended:
            style = "success" if ended == "loaded" and not skipped else "warning"
        if self.bar.bar_style != style:
            self.bar.bar_style = style
        shown = f"<span style='font-size: 0.9em'>{html.escape(text)}</span>"
        if self.line.value != shown:
            self.line.value = shown
