"""Stand-ins for numpy's array classes, and the rule that cells do not subclass the data libraries' classes.

`np.ndarray(shape, dtype, buffer=...)` (and `recarray(buf=...)`, `chararray(buffer=...)`) builds an array
over any object's memory — an int64 view of an object array's pointers, or object pointers read from a
bytearray — which is a way to forge objects. Cells get a stand-in instead of each array class (from the
`numpy` facade and from `type(arr)`): `isinstance`, `issubclass`, `type(a) is np.ndarray` work, calling it
builds an array without a buffer. Subclassing any numpy/pandas/matplotlib class is refused (a subclass would
reach the real constructor and the libraries' hooks).
"""

from __future__ import annotations

import sys
from typing import Any

from rlm_kernel.sandbox.data.attrs import is_data_class
from rlm_kernel.sandbox.errors import refusal

__all__ = ["ArrayClassStandIn", "class_for_cell", "check_base"]

_BUFFER_KWARGS = frozenset({"buffer", "buf", "offset", "strides", "filename"})
_MAX_POSITIONAL = {"ndarray": 2, "recarray": 2, "chararray": 3}
_standins: dict[type, Any] = {}


class _StandInMeta(type):
    """Metaclass of the stand-ins: isinstance/issubclass/attributes use the real class; calls are checked."""

    _rlm_real: type

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls._rlm_real)

    def __subclasscheck__(cls, sub: Any) -> bool:
        real = sub._rlm_real if isinstance(sub, _StandInMeta) else sub
        return isinstance(real, type) and issubclass(real, cls._rlm_real)

    def __eq__(cls, other: Any) -> bool:
        return other is cls or other is cls._rlm_real

    def __hash__(cls) -> int:
        return hash(cls._rlm_real)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        real = cls._rlm_real
        name = real.__name__
        if name == "memmap":
            raise refusal("np.memmap maps files; files are not available in the sandbox")
        limit = _MAX_POSITIONAL.get(name)
        if _BUFFER_KWARGS & set(kwargs) or (limit is not None and len(args) > limit):
            raise refusal(
                f"{name}(..., buffer=...) builds an array over another object's memory; it is not available "
                "in the sandbox — use np.array(...), np.zeros(...) or np.frombuffer(bytes, dtype)"
            )
        return real(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(cls._rlm_real, name)

    def __repr__(cls) -> str:
        return repr(cls._rlm_real)

    def __dir__(cls) -> list[str]:
        return [n for n in dir(cls._rlm_real) if not n.startswith("_")]


class ArrayClassStandIn(metaclass=_StandInMeta):
    """Base of the per-class stand-ins (never handed out itself)."""

    _rlm_real = object


def _standin(real: type) -> Any:
    found = _standins.get(real)
    if found is None:
        found = _StandInMeta(real.__name__, (ArrayClassStandIn,), {"_rlm_real": real, "__module__": "numpy"})
        found.__qualname__ = real.__qualname__
        _standins[real] = found
    return found


def class_for_cell(kind: type) -> Any:
    """What `type(obj)` gives a cell for an object of class `kind`: a stand-in for numpy's array classes."""
    np = sys.modules.get("numpy")
    if np is not None and issubclass(kind, np.ndarray):
        return _standin(kind)
    return kind


def check_base(base: Any) -> None:
    """Refuse a class statement whose base is a numpy/pandas/matplotlib class or a stand-in."""
    if isinstance(base, _StandInMeta) or (isinstance(base, type) and is_data_class(base)):
        raise refusal(
            f"subclassing {getattr(base, '__name__', 'this class')} (numpy, pandas or matplotlib) is not "
            "available in the sandbox; wrap the object in your own class instead"
        )


def ndarray_standin() -> Any:
    """The stand-in the `numpy` facade serves as `np.ndarray`."""
    import numpy as np

    return _standin(np.ndarray)
