"""The analysis helpers' heavy modules, imported on their first use instead of at kernel start-up.

numpy, bm25s's stop words and the extractors' compiled patterns cost ~0.3 s to import: the helpers' entry
modules (`find_relevant`, `map_reduce`, `extract_functions`, `corpus`) import only light code at start and
load what they compute with through `load()`, as kernel work a cell's limits do not count (`uncounted`: not
its CPU or wall time, not its memory cap).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from rlm_kernel.sandbox.limits import uncounted

__all__ = ["load"]

_loaded: set[str] = set()


def load(name: str) -> ModuleType:
    """The module `name` (one of this package's), imported on first use outside the calling cell's limits."""
    if name in _loaded:
        return sys.modules[name]
    with uncounted():
        module = importlib.import_module(name)
    _loaded.add(name)
    return module
