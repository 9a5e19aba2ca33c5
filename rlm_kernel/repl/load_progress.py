"""Progress of a long corpus load: files, bytes and skipped so far, shown once a load passes one second and
20 files (so that small loads, as in the tutorials, show the same output however busy the machine is).

As the kernel's other live views do (`rlm_kernel.widgets.display_mode`): with a widget frontend an
ipywidget (`widgets.load_view.LoadView`: a bar of files read of those found, and the line), its display's
text/plain the same line; without one an updating display, an HTML progress bar with the plain-text line
as its twin; with `display=off`, nothing. The last update gives the final figures and says how the load
ended ("loaded", "interrupted").
"""

from __future__ import annotations

import html
import time

from rlm_kernel.widgets.load_view import LoadView, load_line

__all__ = ["LoadProgress"]

_AFTER = 1.0  # seconds before anything is shown: short loads stay quiet
_MIN_FILES = 20  # files read before anything is shown: a handful of files never shows progress
_EVERY = 0.25  # seconds between updates


def _mode() -> str:
    from rlm_kernel.widgets.display_mode import resolve_mode

    try:
        return resolve_mode()[0]
    except ValueError:  # an invalid display setting (%rlm display explains it) must not break a load
        return "text"


class LoadProgress:
    """`progress(name, size, skipped)` callback for `context.load` (`expect(total)` once the files are
    listed); `done(note)` shows the last figures."""

    def __init__(self, total_files: int | None = None, mode: str | None = None) -> None:
        self.total = total_files
        self.files = 0
        self.bytes = 0
        self.skipped = 0
        self.started = time.monotonic()
        self.shown_at = 0.0
        self.mode = mode
        self.handle = None
        self.view: LoadView | None = None

    def expect(self, total: int) -> None:
        """The number of files the load will read (a directory's or a glob's, once listed)."""
        self.total = total

    def __call__(self, name: str, size: int, skipped: int) -> None:
        self.files += 1
        self.bytes += max(int(size), 0)
        self.skipped = skipped
        now = time.monotonic()
        if self.files < _MIN_FILES or now - self.started < _AFTER or now - self.shown_at < _EVERY:
            return
        self.shown_at = now
        self._show(f"loading … {name[-60:]}")

    def _line(self, note: str) -> str:
        seconds = time.monotonic() - self.started
        return load_line(note, self.files, self.total, self.bytes, self.skipped, seconds)

    def _bundle(self, note: str) -> dict[str, str]:
        text = self._line(note)
        bar = f"<progress value='{self.files}' max='{self.total}'></progress> " if self.total else ""
        return {
            "text/plain": text,
            "text/html": f"<div class='rlm-load-progress'>{bar}{html.escape(text)}</div>",
        }

    def _show(self, note: str, ended: str = "") -> None:
        from IPython import get_ipython

        from rlm_kernel.output import kernel_display, kernel_update

        if get_ipython() is None:
            return
        if self.mode is None:
            self.mode = _mode()
        if self.mode == "off":
            return
        # the kernel's own display (its markup is kept; a cell's is sanitised: rlm_kernel/output); file names
        # in it come from the corpus and are escaped
        if self.mode == "widgets":
            bundle = self._widget(note, ended)
        else:
            bundle = self._bundle(note)
        if self.handle is None:
            self.handle = kernel_display(bundle, display_id=True)
        elif self.mode != "widgets" or ended:  # a live widget updates through its comm
            kernel_update(bundle, self.handle.display_id)

    def _widget(self, note: str, ended: str) -> dict[str, str]:
        text = self._line(note)
        if self.view is None:
            self.view = LoadView(self.total)
        self.view.update(text, self.files, self.total, ended=ended, skipped=self.skipped)
        bundle = dict(self.view.widget._repr_mimebundle_() or {})
        bundle["text/plain"] = text
        return bundle

    def done(self, note: str = "loaded") -> None:
        """The final figures, if anything was shown; `note` says how the load ended."""
        if self.handle is not None:
            self._show(note, ended=note.split(":")[0])
