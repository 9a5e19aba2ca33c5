"""Progress of a long corpus load: files, bytes and skipped so far, as one updating display (an HTML progress
bar with a plain-text twin, the line a frontend without HTML shows), shown once a load passes one second and
20 files (so that small loads, as in the tutorials, show the same output however busy the machine is)."""

from __future__ import annotations

import html
import time

__all__ = ["LoadProgress"]

_AFTER = 1.0  # seconds before anything is shown: short loads stay quiet
_MIN_FILES = 20  # files read before anything is shown: a handful of files never shows progress
_EVERY = 0.25  # seconds between updates


class LoadProgress:
    """`progress(name, size, skipped)` callback for `context.load`; `done()` shows the last figures."""

    def __init__(self, total_files: int | None = None) -> None:
        self.total = total_files
        self.files = 0
        self.bytes = 0
        self.skipped = 0
        self.started = time.monotonic()
        self.shown_at = 0.0
        self.handle = None

    def __call__(self, name: str, size: int, skipped: int) -> None:
        self.files += 1
        self.bytes += max(int(size), 0)
        self.skipped = skipped
        now = time.monotonic()
        if self.files < _MIN_FILES or now - self.started < _AFTER or now - self.shown_at < _EVERY:
            return
        self.shown_at = now
        self._show(f"loading … {name[-60:]}")

    def _bundle(self, note: str) -> dict[str, str]:
        of = f" of {self.total:,}" if self.total else ""
        text = (
            f"{note}: {self.files:,}{of} files, {self.bytes / 1e6:,.1f} MB, {self.skipped:,} skipped, "
            f"{time.monotonic() - self.started:.1f} s"
        )
        bar = f"<progress value='{self.files}' max='{self.total}'></progress> " if self.total else ""
        return {
            "text/plain": text,
            "text/html": f"<div class='rlm-load-progress'>{bar}{html.escape(text)}</div>",
        }

    def _show(self, note: str) -> None:
        from IPython import get_ipython

        from rlm_kernel.output import kernel_display, kernel_update

        if get_ipython() is None:
            return
        # the kernel's own display (its markup is kept; a cell's is sanitised: rlm_kernel/output); file names
        # in it come from the corpus and are escaped in _bundle
        if self.handle is None:
            self.handle = kernel_display(self._bundle(note), display_id=True)
        else:
            kernel_update(self._bundle(note), self.handle.display_id)

    def done(self, note: str = "loaded") -> None:
        """The final figures, if anything was shown."""
        if self.handle is not None:
            self._show(note)
