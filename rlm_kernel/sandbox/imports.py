"""What an `import` statement in a cell does: hand out a facade from the allowlist, or refuse naming the list.

The stdlib facades are built with the session (facades.py); the data libraries' facades the first time a cell
imports one of them (data/). Relative imports, `import *` and modules outside the lists are refused.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from rlm_kernel.sandbox.data import DATA_MODULES, data_facades
from rlm_kernel.sandbox.errors import ModuleNotAvailable, refusal
from rlm_kernel.sandbox.facades import ALLOWED_MODULES

if TYPE_CHECKING:
    from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["import_facade"]

# Modules that C code of allowed modules imports lazily through the *calling frame's* `__import__` — the
# cell's: `datetime.strptime` and `time.strptime` import `_strptime`. A cell cannot name them itself
# (underscore names are refused at compile time), and the module goes only to the C code that asked for it.
_C_LAZY_IMPORTS = frozenset({"_strptime"})
_DATA_ROOTS = frozenset({"numpy", "pandas", "matplotlib"})


def import_facade(session: SandboxSession, name: Any, fromlist: Any = (), level: int = 0) -> Any:
    """What `import` does in a cell: return a facade from the allowlist, or refuse with the list."""
    if level:
        raise refusal("relative imports are not available in the sandbox")
    if type(name) is not str:
        raise TypeError("module name must be a string")
    if name in _C_LAZY_IMPORTS and not fromlist:
        return importlib.import_module(name)
    if type(fromlist) is list and not fromlist and name.partition(".")[0] in _DATA_ROOTS:
        # C code of numpy/pandas (PyImport_Import) importing its own module through the cell's __import__:
        # it passes an empty *list* (import statements pass None or a tuple) and then reads the module from
        # sys.modules itself; the cell is handed nothing. Only modules already loaded count.
        if name in sys.modules:
            return None
        raise refusal(f"module {name!r} is not available in the sandbox", ModuleNotAvailable)
    facade = session.facades.get(name)
    if facade is None and name in DATA_MODULES:
        session.facades.update(data_facades(session))
        facade = session.facades.get(name)
    if facade is None and name.partition(".")[0] in _DATA_ROOTS:
        raise refusal(
            f"module {name!r} is not available in the rlm kernel; of {name.partition('.')[0]} the sandbox "
            f"serves: {', '.join(m for m in DATA_MODULES if m.startswith(name.partition('.')[0]))}",
            ModuleNotAvailable,
        )
    if facade is None:
        raise refusal(
            f"module {name!r} is not available in the rlm kernel; available modules: "
            f"{', '.join(ALLOWED_MODULES)}; with the [data] extra: {', '.join(DATA_MODULES)}",
            ModuleNotAvailable,
        )
    if fromlist:
        for item in fromlist:
            if item == "*":
                raise refusal("'import *' is not available in the sandbox; import names explicitly")
            if type(item) is not str or item not in facade._rlm_attrs:
                raise ImportError(
                    f"cannot import name {item!r} from {name!r} in the rlm sandbox; available: "
                    f"{', '.join(sorted(facade._rlm_attrs))}"
                )
        return facade
    if "." in name:
        return session.facades[name.split(".")[0]]
    return facade
