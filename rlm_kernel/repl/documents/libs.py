"""The parsing libraries of the `[corpora]` extra, imported on first use as kernel work (`uncounted`), with a
message naming the extra when one is missing."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from rlm_kernel.repl.documents.caps import FileSkipped
from rlm_kernel.sandbox.limits import uncounted

__all__ = ["need"]

_PACKAGES = {
    "pypdf": "pypdf",
    "lxml.html": "lxml",
    "lxml.etree": "lxml",
    "docx": "python-docx",
    "pyarrow.parquet": "pyarrow",
}


def need(module: str, what: str) -> ModuleType:
    """`module`, imported outside the calling cell's limits on first use; `FileSkipped` naming the
    `[corpora]` extra when it is not installed."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        return loaded
    try:
        with uncounted():
            return importlib.import_module(module)
    except ImportError:
        package = _PACKAGES.get(module, module)
        raise FileSkipped(
            f"reading {what} needs {package}, which is not installed: pip install 'rlm-kernel[corpora]'"
        ) from None
