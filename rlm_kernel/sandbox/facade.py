"""The facade type: a read-only stand-in for a module that hands out only the names chosen for it.

`make_facade(name, attrs)` is the only way to build one (cells cannot: the constructor wants a private token);
`Refused` marks a name left out on purpose, with the reason its read raises. The stdlib allowlist
(facades.py) and the data libraries (data/modules.py) build theirs with it.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from rlm_kernel.sandbox.errors import SandboxError, refusal
from rlm_kernel.sandbox.filenames import is_sandboxed_filename

__all__ = ["Facade", "Refused", "is_cell_function", "make_facade", "refused_entries"]

_TOKEN = object()


class Facade:
    """A read-only stand-in for an allowlisted module: attribute access returns only what was chosen."""

    __slots__ = ("_rlm_name", "_rlm_attrs")

    def __init__(self, name: str, attrs: dict[str, Any], *, token: object = None) -> None:
        if token is not _TOKEN:
            raise refusal("facades cannot be created from a cell; use import")
        object.__setattr__(self, "_rlm_name", name)
        object.__setattr__(self, "_rlm_attrs", MappingProxyType(dict(attrs)))

    def __getattr__(self, attr: str) -> Any:
        try:
            value = self._rlm_attrs[attr]
        except KeyError:
            raise AttributeError(
                f"module {self._rlm_name!r} in the rlm sandbox has no attribute {attr!r}; "
                f"available: {_listing(self.__dir__(), self._rlm_name)}"
            ) from None
        if type(value) is Refused:
            raise refusal(f"{self._rlm_name}.{attr} {value.reason}")
        return value

    def __setattr__(self, attr: str, value: Any) -> None:
        raise SandboxError("modules are read-only in the sandbox; keep your own state in variables")

    __delattr__ = __setattr__  # type: ignore[assignment]

    def __dir__(self) -> list[str]:
        return sorted(k for k, v in self._rlm_attrs.items() if type(v) is not Refused)

    def __repr__(self) -> str:
        return f"<module {self._rlm_name!r} (rlm sandbox facade)>"

    def __reduce__(self) -> Any:
        raise TypeError("facades cannot be pickled or copied")


def _listing(names: list[str], module: str) -> str:
    """The names a facade offers, for an error message (long lists point at dir() instead)."""
    if len(names) <= 60:
        return ", ".join(names)
    return f"{', '.join(names[:20])}, ... ({len(names)} names; dir() of the module lists them)"


class Refused:
    """A facade entry for something left out on purpose: reading it raises a refusal with the reason."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


_READ_ONLY: dict[type, Callable[[Any], Any]] = {
    set: frozenset,
    list: tuple,
    dict: MappingProxyType,
    bytearray: bytes,
}


def refused_entries(entries: dict[str, str]) -> dict[str, Refused]:
    """Facade entries for names left out on purpose: name -> the reason reading it gives."""
    return {name: Refused(reason) for name, reason in entries.items()}


def make_facade(name: str, attrs: dict[str, Any]) -> Facade:
    """A facade over `attrs`; mutable constants (hashlib.algorithms_available) become read-only copies."""
    frozen = {key: _READ_ONLY[type(v)](v) if type(v) in _READ_ONLY else v for key, v in attrs.items()}
    return Facade(name, frozen, token=_TOKEN)


def is_cell_function(fn: Any) -> bool:
    """True for a function (or lambda) defined in a cell."""
    code = getattr(fn, "__code__", None)
    return code is not None and is_sandboxed_filename(code.co_filename)
