"""numpy, pandas and matplotlib behind the sandbox policy: facades, the attribute policy for their objects,
class stand-ins and figure display.

`DATA_MODULES` are the import names cells may use; `data_facades(session)` builds their facades the first
time a cell imports one (the libraries are loaded then, not at kernel start). Without the optional extra
the import is refused with the install command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Imported with the package, never on a cell's first `import pandas`: the audit hook refuses imports of kernel
# modules while a cell runs.
from rlm_kernel.sandbox.data.loader import load
from rlm_kernel.sandbox.data.modules import build

if TYPE_CHECKING:
    from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["DATA_MODULES", "INSTALL_HINT", "data_facades"]

DATA_MODULES = ("numpy", "numpy.linalg", "numpy.random", "pandas", "matplotlib", "matplotlib.pyplot")
INSTALL_HINT = "pip install 'rlm-kernel[data]'"


def data_facades(session: SandboxSession) -> dict[str, Any]:
    """The facades of DATA_MODULES for `session` (built once per session; the libraries load on first use)."""
    built = session.data_facades
    if built is None:
        load()
        built = session.data_facades = build(session)
    return built
