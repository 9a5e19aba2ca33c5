"""Fresh user namespaces: safe `__builtins__`, every guard RestrictedPython code calls, and `__name__`.

Guards are closures over the `SandboxSession`; the namespace never holds the session or a real module.
"""

from __future__ import annotations

import builtins as _py_builtins
import io
from typing import Any

from rlm_kernel.sandbox.builtins import make_builtins
from rlm_kernel.sandbox.compare import COMPARE_GUARDS
from rlm_kernel.sandbox.keys import KEY_GUARDS, SET_GUARD_NAMES
from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["new_namespace", "GUARD_NAMES", "repair_namespace"]

GUARD_NAMES = (
    "_getattr_",
    "_getitem_",
    "_getitem_c_",
    "_write_",
    "_write_attr_",
    "_getiter_",
    "_iter_unpack_sequence_",
    "_unpack_sequence_",
    "_inplacevar_",
    "_apply_",
    "_print_",
    "_cancel_check_",
    "_cell_thread_",
    "_outside_cell_",
    "_mark_class_",
    "_pow_",
    "_mul_",
    "_lshift_",
    "_mod_",
    "_format_",
    "_class_of_",
    "_type_",
    "_int_",
    "_float_",
    "_range_ok_",
    *COMPARE_GUARDS,
    "_set_display_",
    *KEY_GUARDS,
    *SET_GUARD_NAMES,
)


def new_namespace(session: SandboxSession, *, name: str = "__main__") -> dict[str, Any]:
    """A new namespace for restricted code run under `session`."""
    namespace: dict[str, Any] = {"__name__": name, "__metaclass__": type}
    namespace.update({key: session.guards[key] for key in GUARD_NAMES})
    namespace["__builtins__"] = make_builtins(session, session.guards, namespace)
    return namespace


def repair_namespace(namespace: dict[str, Any], session: SandboxSession) -> list[str]:
    """Restore guards and `__builtins__` if something outside the policy replaced them; return what changed.

    IPython's own namespace set-up puts the real `builtins` module and `get_ipython`/`exit`/`quit`/`open` in
    `user_ns`; the kernel calls this after that set-up and before each cell.
    """
    fixed = []
    for key in GUARD_NAMES:
        if namespace.get(key) is not session.guards[key]:
            namespace[key] = session.guards[key]
            fixed.append(key)
    builtins = namespace.get("__builtins__")
    if not isinstance(builtins, dict) or builtins.get("_rlm_sandbox_builtins") is not True:
        namespace["__builtins__"] = make_builtins(session, session.guards, namespace)
        fixed.append("__builtins__")
    if namespace.get("__metaclass__") is not type:
        namespace["__metaclass__"] = type
        fixed.append("__metaclass__")
    if "__builtin__" in namespace:
        del namespace["__builtin__"]
        fixed.append("__builtin__")
    for key in ("get_ipython", "exit", "quit", "open"):
        if key in namespace and _is_shell_object(namespace[key]):
            del namespace[key]
            fixed.append(key)
    return fixed


def _is_shell_object(value: Any) -> bool:
    """True for what IPython (not a cell) put in the namespace: its `open`, `exit`, `get_ipython`."""
    if value is _py_builtins.open or value is io.open:
        return True
    for module in (getattr(value, "__module__", None), type(value).__module__):
        if isinstance(module, str) and module.split(".")[0] in ("IPython", "ipykernel"):
            return True
    return False
