"""How warnings raised inside rlm-kernel's own code reach a cell: one line, no kernel file path or source.

Warnings from the kernel's packages (e.g. `UnknownPriceWarning`) are about the user's call, not our code, so
the cell shows `UnknownPriceWarning: ...` instead of a path into site-packages and a line of our source.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, TextIO

__all__ = ["install_warning_format"]

PACKAGE_DIR = str(Path(__file__).resolve().parent)


def install_warning_format() -> None:
    """Wrap `warnings.showwarning` once so warnings issued from rlm_kernel print as `Category: message`."""
    current = warnings.showwarning
    if getattr(current, "rlm_kernel_format", False):
        return

    def showwarning(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> Any:
        if str(Path(filename).resolve()).startswith(PACKAGE_DIR):
            import sys

            stream = file if file is not None else sys.stderr
            try:
                stream.write(f"{category.__name__}: {message}\n")
            except (OSError, ValueError):
                pass
            return None
        return current(message, category, filename, lineno, file, line)

    showwarning.rlm_kernel_format = True  # type: ignore[attr-defined]
    warnings.showwarning = showwarning
