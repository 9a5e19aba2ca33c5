"""Loading the data libraries once per process, as kernel code: Agg backend, warm-up, install hint.

This module is kernel code for the audit hook (it is not one of the proxy files): what the libraries import
and read while they load (their own modules, matplotlib's font cache) is decided here, before any cell
object is involved. Everything a cell does with them later is judged by the cell's frame.
"""

from __future__ import annotations

import importlib.util
import io
import os
import tempfile
import threading
from typing import Any

from rlm_kernel.sandbox.data.plotting import RcParamsView
from rlm_kernel.sandbox.data.writable import DATA_ATTR_WRITES, DATA_WRITABLE
from rlm_kernel.sandbox.errors import ModuleNotAvailable, refusal
from rlm_kernel.sandbox.limits import uncounted
from rlm_kernel.sandbox.made import watch_figures

__all__ = ["load", "available"]

_LOCK = threading.Lock()
_LOADED: list[bool] = []
_REQUIRED = ("numpy", "pandas", "matplotlib")


def available() -> bool:
    """True when numpy, pandas and matplotlib are installed."""
    return all(importlib.util.find_spec(name) is not None for name in _REQUIRED)


def load() -> None:
    """Import numpy, pandas and matplotlib (Agg backend) and warm up the lazily loaded parts once."""
    if _LOADED:
        return
    with _LOCK, uncounted():
        if _LOADED:
            return
        missing = [name for name in _REQUIRED if importlib.util.find_spec(name) is None]
        if missing:
            raise refusal(
                f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed; tables and "
                "plots need the optional extra: pip install 'rlm-kernel[data]' (then restart the kernel)",
                ModuleNotAvailable,
            )
        os.environ["MPLBACKEND"] = "agg"  # never ipykernel's inline backend or a GUI one
        # matplotlib's font cache: in a confined kernel only its private TMPDIR is writable (~/.cache is not)
        os.environ.setdefault("MPLCONFIGDIR", os.path.join(tempfile.gettempdir(), "matplotlib"))
        import matplotlib

        matplotlib.use("agg", force=True)
        import matplotlib.pyplot as plt
        import numpy as np
        import pandas as pd

        # Warm-up: pandas' plotting module, Agg's renderer, the default font and the PNG writer are imported
        # and opened lazily on first use; do it here, as kernel code.
        fig = plt.figure(figsize=(2, 1))
        ax = fig.add_subplot()
        pd.Series(np.arange(3)).plot(ax=ax, title="warm-up $x^2$")
        ax.bar(["a"], [1])
        ax.legend(["a"])
        fig.savefig(io.BytesIO(), format="png")
        plt.close(fig)
        pd.read_csv(io.StringIO("a,b\n1,2\n"))
        pd.read_json(io.StringIO('[{"a": 1}]'))
        pd.DataFrame({"a": [1]})._repr_html_()
        pd.Series(["x1"]).str.extract(r"(\d)")
        _register_writable(np, pd)
        _refuse_font_files()
        watch_figures()  # a figure made while model code runs is recorded as model-made (framed when shown)
        _LOADED.append(True)


def _refuse_font_files() -> None:
    """No font is read from a file a cell names. `FontProperties.set_file` is where every font file name
    enters: its `fname=`, and `_from_any`, which turns any `os.PathLike` (a cell's object with `__fspath__`)
    given as `fontproperties=`/`font=`/`prop=` of any Artist method into one. FreeType then opened that path
    at draw time; the audit hook refused the open, so the figure failed to draw with a FreeType error (third
    red team: `ax.text(0, 0, 'x', fontproperties=P('.env'))`). Now the call itself is refused, by the facade
    layer rather than the audit hook alone. The kernel never names a font file: default fonts are found by
    family."""
    from matplotlib.font_manager import FontProperties

    original = FontProperties.set_file

    def set_file(self: Any, file: Any) -> None:
        if file is not None:
            raise refusal(
                "a font file (fname=, or a path given as fontproperties=/font=/prop=) is not available in "
                "the sandbox; name a font family instead, e.g. fontfamily='serif'"
            )
        original(self, file)

    FontProperties.set_file = set_file  # type: ignore[method-assign]


def _register_writable(np: Any, pd: Any) -> None:
    """Arrays, frames and their indexers accept item writes (`df['c'] = ...`, `a[mask] = 0`)."""
    from pandas.core import indexing

    DATA_WRITABLE.update({np.ndarray, pd.DataFrame, pd.Series, RcParamsView})
    DATA_WRITABLE.update(
        getattr(indexing, name) for name in ("_LocIndexer", "_iLocIndexer", "_AtIndexer", "_iAtIndexer")
    )
    for cls in (pd.Index, pd.RangeIndex, pd.DatetimeIndex, pd.CategoricalIndex, pd.MultiIndex):
        DATA_WRITABLE.add(cls)
        DATA_ATTR_WRITES.setdefault(cls.__name__, DATA_ATTR_WRITES["Index"])
