"""Which displays are the kernel's own: a mark only kernel code can put on a bundle's metadata, and the
objects (by identity) and types whose rich representations the kernel made.

The mark is a private object (compared by identity), not a value: a cell can pass any metadata to
`display()`, but it never holds this object (it is added by the kernel's display formatter or by
`kernel_display` and removed by the display publisher before anything is sent). Identity, not type, for
objects such as a run's `RLMResult`: a cell can make another instance of a kernel class
(`dataclasses.replace(rlm_result, answer=...)`), and that copy must not be shown as the kernel's own run
display.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from typing import Any

__all__ = [
    "is_owned",
    "kernel_display",
    "kernel_update",
    "mark",
    "mark_model_made",
    "model_made",
    "own",
    "own_type",
    "take_mark",
]

KEY = "rlm_kernel.own_display"


class _Mark(str):
    """A str (so a stock kernel, which has no publisher to take it out, can still send the metadata as JSON)
    that counts only by identity: an equal string made by a cell is not it."""


_MARK = _Mark("kernel")
MODEL_KEY = "rlm_kernel.model_made"
_MODEL = _Mark("model")  # put by the display formatter on the bundle of an object model code's class made
_OWNED: dict[int, tuple[weakref.ref[Any], Callable[[], Any] | None, str | None]] = {}
_OWNED_TYPES: set[type] = set()


def mark(metadata: Any = None) -> dict[str, Any]:
    """`metadata` (a copy) marked as the kernel's own display."""
    out = dict(metadata) if isinstance(metadata, dict) else {}
    out[KEY] = _MARK
    return out


def mark_model_made(metadata: Any = None) -> dict[str, Any]:
    """`metadata` (a copy) marked as the display of something model-written code made (labelled on its way
    out: `bundles.label_model_output`); only kernel code can make the mark, and it only ever lowers trust."""
    out = dict(metadata) if isinstance(metadata, dict) else {}
    out[MODEL_KEY] = _MODEL
    return out


def model_made(metadata: Any) -> bool:
    """True if the display formatter marked this bundle's metadata as made by model-written code."""
    return isinstance(metadata, dict) and metadata.get(MODEL_KEY) is _MODEL


def take_mark(metadata: Any) -> tuple[bool, Any]:
    """(was it marked by the kernel, metadata without the mark). A forged mark counts as no mark."""
    if isinstance(metadata, dict) and KEY in metadata:
        marked = metadata[KEY] is _MARK
        return marked, {k: v for k, v in metadata.items() if k != KEY}
    return False, metadata


def own(obj: Any, state: Callable[[], Any] | None = None) -> Any:
    """Record `obj` (made by kernel code) as showing the kernel's own display; returns it.

    `state()`, when given, is what the display shows (plain data): it is fingerprinted now, and the object
    counts as the kernel's only while its state is unchanged — a cell that can reach a list or dict inside
    it (a run's `citations`, `trajectory`) and edits it (model code in a later `--shared` run, an agent's
    cell) makes an object whose display is sanitised like any cell's, never the kernel's styled one."""
    key = id(obj)

    def forget(_ref: Any, key: int = key, owned: dict = _OWNED) -> None:
        owned.pop(key, None)  # bound now: at interpreter exit the module's globals may already be gone

    try:
        _OWNED[key] = (weakref.ref(obj, forget), state, _fingerprint(state))
    except TypeError:  # not weak-referenceable: never trusted
        pass
    return obj


def _fingerprint(state: Callable[[], Any] | None) -> str | None:
    """The state as JSON text (None without a state function); objects that are not plain data count by
    their type's name only, so no method of theirs runs here."""
    if state is None:
        return None
    try:
        return json.dumps(state(), default=lambda o: f"<{type(o).__qualname__}>", sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return "<unreadable>"


def own_type(cls: type) -> type:
    """Every instance of exactly `cls` displays as the kernel's own (for types whose display shows only
    kernel-made structure around escaped text, e.g. a budget widget); a decorator."""
    _OWNED_TYPES.add(cls)
    return cls


def is_owned(obj: Any) -> bool:
    """True for an object recorded by `own`, or of a type recorded by `own_type` (exactly, no subclass),
    that has no display method of its own in its instance dict."""
    entry = _OWNED.get(id(obj))
    if entry is not None and entry[0]() is obj:
        if entry[2] is not None and _fingerprint(entry[1]) != entry[2]:
            return False  # changed since the kernel made it
    elif type(obj) not in _OWNED_TYPES:
        return False
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return True
    return not any(type(k) is str and k.startswith(("_repr_", "_ipython_")) for k in attrs)


def kernel_display(bundle: dict[str, Any], *, display_id: str | bool | None = None) -> Any:
    """Show a bundle the kernel made as its own display (unsanitised); returns the DisplayHandle when
    `display_id` is given. Never for anything a cell made."""
    from IPython.display import display

    return display(bundle, raw=True, metadata=mark(), display_id=display_id)


def kernel_update(bundle: dict[str, Any], display_id: str) -> None:
    """Replace the kernel's own display `display_id` with `bundle`."""
    from IPython.display import display

    display(bundle, raw=True, metadata=mark(), display_id=display_id, update=True)
