"""Which of the person's objects a model block wrote to: item and attribute writes (`obj.helper = f`,
`table['k'] = f`, `setattr(obj, 'k', f)`, `del obj.k`) recorded while one block runs, and named afterwards
by the notebook names that hold those objects (`person.helper`, `table['k']`).

In a `--shared` run (or an MCP agent's cell) model code may store its functions and objects on the
person's instances, dicts and lists; the names it binds are listed (`rootloop.bindings`), and so are these
writes. Only for the block: its namespace's write guards (`_write_`, `_write_attr_`, `setattr`,
`delattr`) are wrapped on entry and put back on exit, so a person's cells pay nothing. The first write to an
object takes a shallow copy of its attributes (or items) to compare with after the block. Writes through a
method (`table.update(...)`, `items.append(f)`) are not seen here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["WriteLog", "changes", "instance_dict", "watching"]

_SNAPSHOT_CAP = 10_000  # attributes/items copied per object; a larger one is reported as "changed" only
_PATHS_PER_OBJECT = 20
_MISSING = object()
SET_ON = "set on your object"
DELETED_FROM = "deleted from your object"
CHANGED_IN = "changed items of your object"


def instance_dict(obj: Any) -> dict | None:
    """`obj`'s own attribute dict, read at C level (no `__getattr__` of its class runs), or None."""
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return attrs if type(attrs) is dict else None


_PLAIN_KEYS = frozenset({str, int, float, bool, type(None)})
_OTHER = object()  # the key under which entries with other keys are kept, by identity


def _plain(pairs: Any) -> dict:
    """`pairs` as a dict; entries whose key is not a plain str/number are kept by identity under `_OTHER`
    (hashing or comparing a model-made key would run its `__hash__`/`__eq__` here, outside the cell)."""
    out: dict = {}
    other: list[tuple[int, int]] = []
    for key, value in pairs:
        if type(key) in _PLAIN_KEYS:
            out[key] = value
        else:
            other.append((id(key), id(value)))
    if other:
        out[_OTHER] = frozenset(other)
    return out


def _snapshot(obj: Any, attribute: bool) -> dict | None:
    """A shallow copy of what a write could change in `obj` (None when too large or not a dict/list); read
    at C level only (a subclass's own `__len__`/`__iter__` never runs here)."""
    kind = type(obj)
    if attribute:
        attrs = instance_dict(obj)
        return _plain(dict.items(attrs)) if attrs is not None and len(attrs) <= _SNAPSHOT_CAP else None
    if issubclass(kind, dict) and dict.__len__(obj) <= _SNAPSHOT_CAP:
        return _plain(dict.items(obj))
    if issubclass(kind, list) and list.__len__(obj) <= _SNAPSHOT_CAP:
        return dict(enumerate(list.__iter__(obj)))
    return None


class WriteLog:
    """The objects one block's writes went to: id -> (object, attribute write?, copy before the first)."""

    def __init__(self) -> None:
        self.targets: dict[tuple[int, bool], tuple[Any, dict | None]] = {}
        self.open = True

    def note(self, obj: Any, attribute: bool) -> None:
        key = (id(obj), attribute)
        if self.open and key not in self.targets and len(self.targets) < _SNAPSHOT_CAP:
            self.targets[key] = (obj, _snapshot(obj, attribute))


@contextmanager
def watching(ns: dict[str, Any]) -> Iterator[WriteLog]:
    """Record the item and attribute writes code running in `ns` makes until the block ends."""
    log = WriteLog()
    write, write_attr = ns.get("_write_"), ns.get("_write_attr_")
    builtins = ns.get("__builtins__")
    set_attr = builtins.get("setattr") if isinstance(builtins, dict) else None
    del_attr = builtins.get("delattr") if isinstance(builtins, dict) else None
    if not (callable(write) and callable(write_attr) and callable(set_attr) and callable(del_attr)):
        yield log  # not a sandboxed namespace: nothing to watch
        return

    def logged_write(obj: Any) -> Any:
        log.note(obj, False)
        return write(obj)

    def logged_write_attr(obj: Any) -> Any:
        log.note(obj, True)
        return write_attr(obj)

    def logged_setattr(obj: Any, name: str, value: Any) -> None:
        log.note(obj, True)
        return set_attr(obj, name, value)

    def logged_delattr(obj: Any, name: str) -> None:
        log.note(obj, True)
        return del_attr(obj, name)

    swaps = (
        (ns, "_write_", write, logged_write),
        (ns, "_write_attr_", write_attr, logged_write_attr),
        (builtins, "setattr", set_attr, logged_setattr),
        (builtins, "delattr", del_attr, logged_delattr),
    )
    for where, key, _, logged in swaps:
        where[key] = logged
    try:
        yield log
    finally:
        log.open = False
        for where, key, original, logged in swaps:
            if where.get(key) is logged:
                where[key] = original


def _key_text(key: Any) -> str:
    """A key as it would be written; only plain keys are shown (a model-made key's `__repr__` never runs)."""
    return repr(key) if type(key) in (str, int, float, bool) or key is None else "…"


def _diff(where: str, attribute: bool, before: dict | None, now: dict | None) -> list[tuple[str, str, Any]]:
    if before is None or now is None:
        return [(f"{where}{'.…' if attribute else '[…]'}", CHANGED_IN, None)]
    found: list[tuple[str, str, Any]] = []
    if before.get(_OTHER) != now.get(_OTHER):  # sets of (id, id) pairs: compared without running code
        found.append((f"{where}[…]", SET_ON, None))
    for key, value in now.items():
        if key is _OTHER:
            continue
        if before.get(key, _MISSING) is not value:
            path = f"{where}.{key}" if attribute and type(key) is str else f"{where}[{_key_text(key)}]"
            found.append((path, SET_ON, value))
    for key in [k for k in before if k not in now and k is not _OTHER]:
        path = f"{where}.{key}" if attribute and type(key) is str else f"{where}[{_key_text(key)}]"
        found.append((path, DELETED_FROM, None))
    if len(found) > _PATHS_PER_OBJECT:
        values = [v for _, _, v in found[_PATHS_PER_OBJECT:]]
        found = found[:_PATHS_PER_OBJECT] + [(f"{where} …", f"and {len(values)} more", values)]
    return found


def changes(log: WriteLog, ns: dict[str, Any], before: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(path, what, value stored) for each write of the block to an object the notebook held before it,
    named by the name that holds it (`person.helper`), or one step in (`person.config['k']`)."""
    if not log.targets:
        return []
    wanted = {key[0] for key in log.targets}
    named: dict[int, str] = {}
    for name, value in before.items():
        if type(name) is str and name[:1] != "_" and ns.get(name, _MISSING) is value and id(value) in wanted:
            named.setdefault(id(value), name)
    if len(named) < len(wanted):  # one step in: an attribute or item of a value the person had
        for name, value in before.items():
            if type(name) is not str or name[:1] == "_" or ns.get(name, _MISSING) is not value:
                continue
            inner = value if issubclass(type(value), dict) else instance_dict(value)
            if inner is None:
                continue
            items = dict.items(inner) if isinstance(inner, dict) else ()
            for count, (key, item) in enumerate(items):
                if count > 1000 or len(named) == len(wanted):
                    break
                if id(item) in wanted and id(item) not in named:
                    joint = f".{key}" if inner is not value and type(key) is str else None
                    named[id(item)] = f"{name}{joint or f'[{_key_text(key)}]'}"
    found: list[tuple[str, str, Any]] = []
    for (key, attribute), (obj, snapshot) in log.targets.items():
        where = named.get(key)
        if where is None:
            continue  # an object the block made, or one the notebook does not hold by a name
        now = _snapshot(obj, attribute) if snapshot is not None else None
        found.extend(_diff(where, attribute, snapshot, now))
    return found
