"""Which objects a cell may change, and the refusal for the rest in the terms plain Python would use.

`WRITABLE_TYPES` (plus the data libraries' classes in data/writable.py and classes defined in cells) take item
and attribute writes; `AttrWriter` lets a data-library object set only its allowed attributes; `refused_write`
answers every other write: allowed for a cell's own functions and decimal contexts, else a refusal that is a
TypeError or AttributeError where Python's would be, so honest `try`/`except` code behaves the same.
"""

from __future__ import annotations

import collections
import io
import types
from typing import Any

from rlm_kernel.sandbox.errors import SandboxAttributeError, SandboxTypeError, refusal
from rlm_kernel.sandbox.facade import Facade
from rlm_kernel.sandbox.filenames import is_sandboxed_filename
from rlm_kernel.sandbox.safe_decimal import CappedContext
from rlm_kernel.sandbox.safe_int import CELL_CLASSES

__all__ = ["WRITABLE_TYPES", "AttrWriter", "refused_write"]

# Containers whose items may be written (besides instances of classes defined in cells).
WRITABLE_TYPES = frozenset(
    {
        dict,
        list,
        set,
        bytearray,
        collections.Counter,
        collections.defaultdict,
        collections.OrderedDict,
        collections.deque,
        collections.ChainMap,
        collections.UserDict,
        collections.UserList,
        io.StringIO,
        io.BytesIO,
        CappedContext,  # decimal.localcontext()'s context: its precision setter enforces the cap
    }
)

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement (not a C type)
_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: a type whose attributes cannot be set (int, str, ...)


class AttrWriter:
    """What `_write_attr_` hands back for a data-library object: sets only the attributes its class allows."""

    __slots__ = ("_rlm_target", "_rlm_allowed")

    def __init__(self, target: Any, allowed: frozenset[str]) -> None:
        object.__setattr__(self, "_rlm_target", target)
        object.__setattr__(self, "_rlm_allowed", allowed)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._rlm_allowed:
            kind = type(self._rlm_target).__name__
            raise refusal(
                f"cannot set {kind}.{name} in the sandbox; attributes that can be set: "
                f"{', '.join(sorted(self._rlm_allowed)) or 'none'}"
            )
        setattr(self._rlm_target, name, value)

    def __delattr__(self, name: str) -> None:
        raise refusal(f"cannot delete attributes of a {type(self._rlm_target).__name__} in the sandbox")


# `int`, `set`, `frozenset`, `dict` in cells: built-in (immutable) types to writers (not Fraction, a Python
# class)
CHECKED_CLASSES = frozenset(CELL_CLASSES[kind] for kind in (int, set, frozenset, dict))


def refused_write(obj: Any, *, attribute: bool) -> Any:
    """A write to `obj` the guards found no rule for (`attribute`: `obj.a = v`, else `obj[k] = v`): `obj` back
    if it may be changed after all, else the refusal."""
    kind = type(obj)
    if kind is types.FunctionType and is_sandboxed_filename(obj.__code__.co_filename):
        return obj  # attributes of your own functions (f.calls = 0)
    if attribute and kind is CappedContext:
        return obj  # a decimal context the cell made (Context(), localcontext()); precision is capped
    if isinstance(obj, Facade):
        raise refusal("modules are read-only in the sandbox; keep your own state in variables")
    name = kind.__name__
    # What plain Python raises for the same write, so honest `try`/`except` code behaves the same.
    if not attribute and not hasattr(kind, "__setitem__"):
        raise refusal(f"{name!r} object does not support item assignment or deletion", SandboxTypeError)
    if attribute and isinstance(obj, type) and (obj.__flags__ & _IMMUTABLE_TYPE or obj in CHECKED_CLASSES):
        raise refusal(f"cannot set attributes of the built-in type {obj.__name__!r}", SandboxTypeError)
    if attribute and not kind.__flags__ & _HEAP_TYPE and not hasattr(obj, "__dict__"):
        raise refusal(f"{name!r} object has no attributes that can be set", SandboxAttributeError)
    raise refusal(
        f"cannot modify this {name} object: only your own variables, lists, "
        "dicts, sets and instances of classes defined in cells can be changed"
    )
