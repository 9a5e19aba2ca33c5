"""Completion and `obj?` lookup for the rlm kernel, under the same underscore rules as cells.

Only plain dotted names are resolved, each step through the sandbox's `_getattr_` guard; nothing is evaluated.
"""

from __future__ import annotations

import builtins
import inspect
import keyword
import re
import types
from typing import Any

from rlm_kernel.sandbox.policy import REFUSED_NAMES

__all__ = ["LookupRefused", "cap_bundle", "cap_matches", "complete", "resolve_path"]

_PATH = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKEN_BEFORE_CURSOR = re.compile(r"(%{0,2})((?:[A-Za-z_][A-Za-z0-9_]*\.)*)([A-Za-z0-9_]*)\Z")


def cap_bundle(data: Any, limit: int) -> Any:
    """A reply's MIME bundle (inspect_request, a `??` pager payload) with each text cut to `limit`
    characters, saying so; other values (and a 0 limit) unchanged."""
    if not limit or not isinstance(data, dict):
        return data
    out: dict[str, Any] = {}
    for mime, value in data.items():
        if isinstance(value, str) and len(value) > limit:
            value = value[:limit] + f"\n[output truncated: {len(value) - limit:,} more characters]"
        elif isinstance(value, (bytes, bytearray)) and len(value) > limit:
            continue  # a binary representation cut short is useless: leave it out
        out[mime] = value
    return out


def cap_matches(reply: dict[str, Any], limit: int) -> dict[str, Any]:
    """A complete_reply under `limit` bytes of names (at most 1000 matches, each name at most 200 chars)."""
    matches = [m for m in reply.get("matches", []) if isinstance(m, str) and len(m) <= 200][:1000]
    while limit and matches and sum(len(m) + 4 for m in matches) > limit:
        matches = matches[: len(matches) // 2]
    if len(matches) == len(reply.get("matches", [])):
        return reply
    kept = set(matches)
    types = reply.get("metadata", {}).get("_jupyter_types_experimental", [])
    return {
        **reply,
        "matches": matches,
        "metadata": {"_jupyter_types_experimental": [t for t in types if t.get("text") in kept]},
    }


class LookupRefused(LookupError):
    """The name is not a plain public dotted path, or it does not resolve."""


# Builtins a cell uses that the policy compiles into a guard (`print` becomes `_print_`): help shows the
# builtin itself, which is only described, never handed to the cell.
_COMPILED_BUILTINS: dict[str, Any] = {"print": builtins.print}


def _refused_names() -> frozenset[str]:
    return frozenset(REFUSED_NAMES)


def _visible(name: str) -> bool:
    return name.isidentifier() and not name.startswith("_")


def _builtins_of(ns: dict[str, Any]) -> dict[str, Any]:
    b = ns.get("__builtins__", {})
    if isinstance(b, dict):
        return b
    return {}  # a real builtins module would mean an unsandboxed namespace: offer nothing from it


# Descriptors whose __get__ runs no user code: functions become bound methods, C slots read a field.
_PLAIN_DESCRIPTORS = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    staticmethod,
    classmethod,
)


def _runs_code_on_access(static: Any) -> bool:
    """True for properties, cached_property and any other descriptor that could run code when read."""
    if isinstance(static, classmethod | staticmethod):
        # they pass the access on to what they wrap: classmethod(property(f)) runs f
        return not isinstance(static.__func__, types.FunctionType | types.BuiltinFunctionType)
    if static is None or isinstance(static, _PLAIN_DESCRIPTORS) or isinstance(static, type):
        return False
    return hasattr(type(static), "__get__")


def resolve_path(ns: dict[str, Any], dotted: str) -> tuple[Any, Any]:
    """(parent, object) for `a.b.c` looked up in `ns`, then its safe builtins, via the `_getattr_` guard.

    Raises `LookupRefused` for anything that is not public identifiers joined by dots, or that does not exist.
    The last attribute is read without running properties (the property object itself is returned).
    """
    if not _PATH.match(dotted):
        raise LookupRefused(dotted)
    parts = dotted.split(".")
    if not all(_visible(p) for p in parts):
        raise LookupRefused(dotted)
    guard = ns.get("_getattr_")
    if guard is None:
        raise LookupRefused("no attribute guard in this namespace")
    head = parts[0]
    if head in ns:
        obj = ns[head]
    elif head in _builtins_of(ns):
        obj = _builtins_of(ns)[head]
    elif head in _COMPILED_BUILTINS and _builtins_of(ns):
        obj = _COMPILED_BUILTINS[head]
    else:
        raise LookupRefused(dotted)
    parent = None
    for part in parts[1:]:
        parent = obj
        try:
            static = inspect.getattr_static(obj, part)
        except AttributeError:
            static = None
        if _runs_code_on_access(static):
            if part == parts[-1]:
                return parent, static  # the descriptor itself, as IPython shows properties
            raise LookupRefused(dotted)
        try:
            obj = guard(obj, part)
        except BaseException:  # noqa: BLE001 - any refusal or failure means "not found"
            raise LookupRefused(dotted) from None
    return parent, obj


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "class"
    if inspect.isroutine(obj) or callable(obj):
        return "function"
    if inspect.ismodule(obj) or type(obj).__name__.endswith("Facade"):
        return "module"
    return "instance"


def complete(
    ns: dict[str, Any],
    hidden: set[str] | dict[str, Any],
    code: str,
    cursor_pos: int | None,
    magic_names: tuple[list[str], list[str]] = ([], []),
) -> dict[str, Any]:
    """A complete_reply content for `code` at `cursor_pos`: public names and attributes only."""
    if cursor_pos is None:
        cursor_pos = len(code)
    before = code[:cursor_pos]
    m = _TOKEN_BEFORE_CURSOR.search(before)
    prefix_pct, path, partial = (m.group(1), m.group(2), m.group(3)) if m else ("", "", "")
    start = cursor_pos - len(partial)
    items: dict[str, str] = {}
    after_expression = m is not None and m.start() > 0 and before[m.start() - 1] in ".)]}'\"0123456789"
    if partial.startswith("_") or after_expression:
        pass  # private names, or attributes of a call/subscript/literal, which completion never evaluates
    elif prefix_pct:
        line_names, cell_names = magic_names
        names = cell_names if prefix_pct == "%%" else line_names
        start = cursor_pos - len(partial) - len(prefix_pct)
        for name in names:
            if name.startswith(partial):
                items[prefix_pct + name] = "magic"
    elif path:
        try:
            _, obj = resolve_path(ns, path[:-1])
        except LookupRefused:
            obj = None
        if obj is not None:
            try:
                names = [n for n in dir(obj) if _visible(n) and n.startswith(partial)]
            except Exception:  # noqa: BLE001 - a broken __dir__ just completes nothing
                names = []
            for name in names:
                try:
                    _, value = resolve_path({"x": obj, "_getattr_": ns["_getattr_"]}, "x." + name)
                except LookupRefused:
                    continue
                items[name] = _kind(value)
    else:
        for name, value in ns.items():
            if _visible(name) and name.startswith(partial) and name not in hidden:
                items[name] = _kind(value)
        refused = _refused_names()
        for name, value in _builtins_of(ns).items():
            if _visible(name) and name.startswith(partial) and name not in refused:
                items.setdefault(name, _kind(value))
        for name in keyword.kwlist:
            if name.startswith(partial) and name not in ("async", "await", "nonlocal"):
                items.setdefault(name, "keyword")
        # helpers the kernel put in the namespace (display, llm_query, ...) are public names too
        for name in hidden:
            if isinstance(name, str) and _visible(name) and name.startswith(partial) and name in ns:
                items.setdefault(name, _kind(ns[name]))
    matches = sorted(items)
    return {
        "matches": matches,
        "cursor_start": start,
        "cursor_end": cursor_pos,
        "metadata": {
            "_jupyter_types_experimental": [
                {"start": start, "end": cursor_pos, "text": name, "type": items[name]} for name in matches
            ]
        },
        "status": "ok",
    }
