"""Which objects model-written code made: library instances (a DataFrame, a matplotlib figure) that
a model block left behind, recorded by identity so that their display is framed as model output wherever it
is shown later (a person's cell's `df`, `display(fig)`, `plt.show()`).

Objects of classes model code defined carry their origin in their methods (`origin.made_by_model`); an
instance of a library class carries nothing. So it is recorded when model code hands it over:

- when a `--shared` run or an MCP agent's cell ends (`rootloop.bindings.Bindings.finish`), the values of the
  names the block bound or rebound, and what they hold one or two steps in (items of lists, tuples, dicts and
  sets; attributes of plain instances — not the insides of library objects), and the values it stored on
  the person's objects (`sandbox.watch`);
- at the end of every run, the values left in its namespace (`rlm_result.namespace`);
- figures at creation: a figure made while model code runs or is on the stack (also by a model function a
  person's cell calls later) is recorded when it is made (`watch_figures`), so `plt.show()` in a later cell
  and the end-of-cell flush frame it.

Recorded by weak reference (an id alone could be reused by a person's later object); objects that cannot be
weakly referenced (ints, strings, plain containers) have no rich display of their own and are only walked.
A display checks one dict lookup (`made`): the DataFrame display path costs nothing more.

Not tracked (data is not tracked: docs/security/trust.md): a new object the person's own code computes from a
model-made one (`df.head()`), and a library object a model function returns to a person's call (other than
a figure).
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any

from rlm_kernel.sandbox.origin import model_code_running, model_frame_on_stack
from rlm_kernel.sandbox.watch import instance_dict

__all__ = ["made", "record", "record_namespace", "watch_figures"]

_MADE: dict[int, weakref.ref[Any]] = {}
_MAX_VISITS = 20_000  # objects walked per record() call: a huge list costs a bounded walk
_ATOMS = frozenset({int, float, complex, bool, str, bytes, bytearray, type(None), range, slice})
_CONTAINERS = (list, tuple, set, frozenset)
_NOT_DATA = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, type)
_LIBRARIES = (
    "pandas",
    "numpy",
    "matplotlib",
    "rlm_kernel",
    "builtins",
    "collections",
    "decimal",
    "fractions",
    "io",
)


def made(obj: Any) -> bool:
    """True if `obj` (this very object) was recorded as made by model-written code."""
    entry = _MADE.get(id(obj))
    return entry is not None and entry() is obj


def _keep(obj: Any) -> None:
    key = id(obj)
    if key in _MADE and _MADE[key]() is obj:
        return

    def forget(_ref: Any, key: int = key, table: dict = _MADE) -> None:
        entry = table.get(key)
        if entry is not None and entry() is None:
            del table[key]

    try:
        _MADE[key] = weakref.ref(obj, forget)
    except TypeError:  # not weakly referenceable: no rich display of its own
        pass


def _plain_instance(obj: Any) -> bool:
    module = type(obj).__module__
    return type(module) is str and not module.startswith(_LIBRARIES)


def record(values: Iterable[Any], depth: int = 2, known: Callable[[], set[int]] | None = None) -> None:
    """Record `values` and what they hold up to `depth` steps in (container items, a plain instance's
    attributes) as made by model-written code. Reads no attribute through code (`__dict__` is read with
    `object.__getattribute__`, only on instances of classes outside the libraries, and `__dict__` cannot
    be defined in the sandbox). `known()`: ids of objects the person already had (a model block's
    `d = your_frame` binds the person's own frame under a new name: it is not recorded), asked for only
    when there is something to record."""
    stack: list[tuple[Any, int]] = [(value, 0) for value in values]
    visits = 0
    seen: set[int] = set()
    had: set[int] | None = None
    while stack and visits < _MAX_VISITS:
        obj, level = stack.pop()
        kind = type(obj)
        if kind in _ATOMS or issubclass(kind, _NOT_DATA) or id(obj) in seen:
            continue
        seen.add(id(obj))
        visits += 1
        inner: Iterable[Any] = ()
        # only C-level reads: a subclass's own __len__ or __iter__ (model code's) never runs here
        mapping = issubclass(kind, dict)
        if mapping or kind in _CONTAINERS:
            if level < depth:
                items: Any = dict.values(obj) if mapping else obj
                if (dict.__len__(obj) if mapping else len(obj)) > _MAX_VISITS:
                    items = list(islice(items, _MAX_VISITS))
                if not _ATOMS.issuperset(map(type, items)):  # a list of numbers: one pass at C speed
                    inner = [item for item in items if type(item) not in _ATOMS]
        else:
            if had is None:
                had = known() if known is not None else set()
            if id(obj) in had:
                continue
            _keep(obj)
            if _plain_instance(obj):
                attrs = instance_dict(obj)
                if attrs is not None:
                    inner = list(attrs.values())
        if level < depth:
            stack.extend((item, level + 1) for item in inner)


def record_namespace(ns: dict[str, Any], helpers: dict[str, Any]) -> None:
    """Record what a finished run's own namespace holds (`rlm_result.namespace`): everything but its
    helpers and `_`-names, and but what the person handed in (the helpers' values: `context`, tools)."""
    values = [v for k, v in list(ns.items()) if type(k) is str and k[:1] != "_" and k not in helpers]
    record(values, known=lambda: {id(v) for v in helpers.values()})


_WATCHED: list[bool] = []


def watch_figures() -> None:
    """Record each matplotlib figure made while model-written code runs or is on the stack (once per
    process, when the data libraries load: kernel code)."""
    if _WATCHED:
        return
    from matplotlib.figure import Figure

    original = Figure.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if model_code_running() or model_frame_on_stack() is not None:
            _keep(self)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    Figure.__init__ = __init__  # type: ignore[method-assign]
    _WATCHED.append(True)
