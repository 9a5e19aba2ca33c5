"""Run-time guards that restricted code calls: attribute, item, write, iteration, in-place and print guards.

`make_guards(session)` builds them as closures over one `SandboxSession`; cells never see the session itself.
What they may hand out is decided in handout.py, which writes they allow in writes.py, the size caps of the
arithmetic and format guards in caps.py.

Why ~460 lines in one function: the guards run on every attribute read, item, write and call of a cell; as
closures they read the session's state from closure cells (the fastest look-up CPython has) and share the
per-session value check and formatter. What needs no session is at module level (and tested alone).
"""

from __future__ import annotations

import abc
import collections
import decimal
import functools
import re
import string
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from rlm_kernel.sandbox.builtins import SafeType, chunked_sort
from rlm_kernel.sandbox.bulk import (
    CHECKED_NAMES,
    CappedDict,
    checked_method,
    dict_comp,
    dict_display,
    set_comp,
    set_display,
)
from rlm_kernel.sandbox.caps import Caps, SafeFormatter
from rlm_kernel.sandbox.compare import CHEAP_KEY as cheap_key
from rlm_kernel.sandbox.compare import COMPARE_GUARDS, SEARCH_METHODS, search_method, super_method
from rlm_kernel.sandbox.data.attrs import DATA_NAMES, NOT_HANDLED, data_attribute
from rlm_kernel.sandbox.data.writable import DATA_ATTR_WRITES, DATA_WRITABLE
from rlm_kernel.sandbox.errors import CellTimeout, refusal
from rlm_kernel.sandbox.fastpath import RANGE_BITS
from rlm_kernel.sandbox.handout import DENIED_TYPES, PLAIN, ValueCheck
from rlm_kernel.sandbox.keys import EXACT_TABLES, KEYED_NAMES, item_key, keyed_method
from rlm_kernel.sandbox.names import ALLOWED_DUNDER_METHODS, EXCEPTION_DUNDERS, READABLE_DUNDERS
from rlm_kernel.sandbox.origin import register_apply
from rlm_kernel.sandbox.safe_int import CELL_CLASSES, REAL_CLASSES, decimal_to_int_check
from rlm_kernel.sandbox.safe_stdlib import counter_elements
from rlm_kernel.sandbox.setops import SET_GUARDS, SET_METHODS, set_method
from rlm_kernel.sandbox.setops import inplace as set_inplace
from rlm_kernel.sandbox.text_caps import TEXT_METHODS, text_method
from rlm_kernel.sandbox.writes import WRITABLE_TYPES, AttrWriter, refused_write

if TYPE_CHECKING:
    from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["make_guards", "DENIED_TYPES", "WRITABLE_TYPES", "DATA_WRITABLE", "DATA_ATTR_WRITES"]

_RAISE = object()

_PLAIN_IMMUTABLE = frozenset(
    {
        int,
        float,
        str,
        bool,
        type(None),
        bytes,
        tuple,
        frozenset,
        complex,
        types.BuiltinFunctionType,
        types.MethodType,
        types.FunctionType,
    }
)

_SHARED_CONTAINERS: dict[type, Callable[[Any], Any]] = {
    dict: types.MappingProxyType,
    list: tuple,
    set: frozenset,
    bytearray: bytes,
}

_NAMEDTUPLE_PRIVATE = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults"})
_PRIVATE_ATTR = re.compile(r"_[A-Za-z0-9]\w*\Z")


_RANGE_BOUND = 1 << RANGE_BITS
_SET_INPLACE = frozenset({"|=", "&=", "^="})
# A tuple key of at most this many items, all of these types, is cheap to hash and compare (keys.py)
_SHORT_KEY = 16
_KEY_SCALARS = frozenset({int, float, str, bytes, bool, type(None), complex})


def range_ok(obj: Any) -> bool:
    """The flag of a `for` loop's fast path (policy.visit_For): `obj` is an exact range whose items are all
    ints within ±2**RANGE_BITS (a range's start and stop are exact ints; no user code runs here)."""
    return (
        type(obj) is range
        and -_RANGE_BOUND < obj.start < _RANGE_BOUND
        and -_RANGE_BOUND < obj.stop < _RANGE_BOUND
    )


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


# -- attributes a guard answers itself (`_SPECIAL` in make_guards); these need no session ------------------
def special_formatter(obj: Any, name: str) -> Any:
    if isinstance(obj, string.Formatter) or (isinstance(obj, type) and issubclass(obj, string.Formatter)):
        raise refusal("string.Formatter is not available in the sandbox; use str.format or f-strings")
    return _RAISE


def special_exception_obj(obj: Any, name: str) -> Any:
    if isinstance(obj, BaseException):
        raise refusal("the .obj of an exception is not available in the sandbox")
    return _RAISE


def special_partial(obj: Any, name: str) -> Any:
    if isinstance(obj, (functools.partial, functools.partialmethod)):
        raise refusal(f"functools.partial's .{name} is not available in the sandbox")
    return _RAISE


def special_elements(obj: Any, name: str) -> Any:
    if isinstance(obj, collections.Counter):
        return counter_elements(obj)
    return _RAISE


def special_mro(obj: Any, name: str) -> Any:
    """`cls.mro()` names the checked classes cells see (`bool.mro()` would hand out the real int)."""
    if isinstance(obj, type):
        real = next((r for checked, r in REAL_CLASSES.items() if obj is checked), obj)
        return lambda: [CELL_CLASSES.get(c, c) for c in type.mro(real)]
    return _RAISE


def special_fromkeys(obj: Any, name: str) -> Any:
    """`dict.fromkeys` (on the class or a dict) in chunks the time limit can stop between (bulk.py)."""
    if obj is dict or type(obj) is dict:
        return CappedDict.fromkeys
    return _RAISE


def special_integer_ratio(obj: Any, name: str) -> Any:
    """`Decimal.as_integer_ratio()` converts to integers in C: checked first (safe_int.py)."""
    if isinstance(obj, decimal.Decimal):
        real = obj.as_integer_ratio

        def as_integer_ratio() -> tuple[int, int]:
            decimal_to_int_check(obj, "as_integer_ratio()")
            return real()

        return as_integer_ratio
    return _RAISE


def special_bulk(obj: Any, name: str) -> Any:
    """Set and dict methods that insert or look up a whole iterable in one C call: in steps (setops.py for
    sets, bulk.py for dicts and unbound methods)."""
    checked = set_method(obj, name) if name in SET_METHODS else None
    if checked is None:
        checked = checked_method(obj, name) if name in CHECKED_NAMES else None
    return _RAISE if checked is None else checked


def special_search(obj: Any, name: str) -> Any:
    """`count`/`index`/`remove` of lists and tuples in steps the time limit can stop (compare.py); a set's
    `remove` looks its key up as keys.py does."""
    checked = search_method(obj, name)
    if checked is None and name == "remove":
        checked = keyed_method(obj, name)
    return _RAISE if checked is None else checked


def special_keyed(obj: Any, name: str) -> Any:
    """`d.get/pop/setdefault`, `s.add/discard` whose costly tuple keys are looked up in steps (keys.py)."""
    checked = keyed_method(obj, name)
    return _RAISE if checked is None else checked


def special_sort(obj: Any, name: str) -> Any:
    """`list.sort()` in runs the time limit can stop between (builtins.chunked_sort); `list.sort(x)` too."""
    if isinstance(obj, type) and issubclass(obj, list) and getattr(obj, "sort", None) is list.sort:

        def unbound_sort(self: Any, /, *, key: Any = None, reverse: bool = False) -> None:
            if not isinstance(self, list):
                list.sort(self)  # the descriptor's own TypeError
            special_sort(self, name)(key=key, reverse=reverse)

        return unbound_sort
    if isinstance(obj, list):

        def sort(*, key: Any = None, reverse: bool = False) -> None:
            list.__setitem__(obj, slice(None), chunked_sort(list(list.__iter__(obj)), key, reverse))

        return sort
    return _RAISE


def make_guards(session: SandboxSession) -> dict[str, Any]:
    """Return the guard functions RestrictedPython-transformed code calls, bound to `session`."""
    limits = session.limits
    check_value = ValueCheck()  # refuses values that lead out of the sandbox (modules, frames, loops ...)

    cell_thread = session.cell_thread
    outside_reason = (
        "code from a cell was called by the kernel outside the cell's limits (from a finalizer, "
        "completion or another thread); it was not run"
    )

    def outside_cell() -> None:
        raise refusal(outside_reason)

    def mark_class(cls: Any) -> Any:
        """`_mark_class_`: record a class a cell defined (session.mark_user_class), refusing exception-group
        subclasses: CPython's `except*` calls a group's own `split`, and kernel code reads `.exceptions`; a
        cell's override could hand a handler a non-exception, raise an object no `except` catches, or run
        while a traceback is shown."""
        if isinstance(cls, type) and issubclass(cls, BaseExceptionGroup):
            raise refusal(
                "subclassing ExceptionGroup is not available in the sandbox; raise ExceptionGroup(...) "
                "or BaseExceptionGroup(...) itself"
            )
        return session.mark_user_class(cls)

    def cancel_check() -> None:
        """Called first in every function, lambda, `except` and `finally` of a cell: re-raises a time-out,
        and refuses to run cell code outside `cell_limits` (a finalizer run by garbage collection or
        namespace repair, completion, another thread such as the LLM event loop)."""
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        if not cell_thread.in_cell:
            raise refusal(outside_reason)

    # -- attribute reads ------------------------------------------------------------------------------------
    def private_allowed(obj: Any, name: str) -> bool:
        if name in _NAMEDTUPLE_PRIVATE and (
            isinstance(obj, tuple) or (isinstance(obj, type) and issubclass(obj, tuple))
        ):
            return True
        return bool(_PRIVATE_ATTR.match(name)) and not _is_dunder(name) and session.is_user_object(obj)

    def guarded_getattr(obj: Any, name: Any, default: Any = _RAISE) -> Any:
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        # Fast path: an ordinary public name yielding an ordinary value.
        if type(name) is str and name[:1] != "_" and name not in slow_names and type(obj) is not super:
            try:
                value = getattr(obj, name)
            except AttributeError as exc:
                if default is not _RAISE:
                    return default
                raise AttributeError(str(exc)) from None
            kind = type(value)
            if kind in _PLAIN_IMMUTABLE:
                return value
            if kind in _SHARED_CONTAINERS and isinstance(obj, type) and not session.is_user_object(obj):
                return _SHARED_CONTAINERS[kind](value)
            return check_value(value, f"attribute {name!r}")
        if type(name) is not str:
            raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
        target = obj
        if type(obj) is super:
            # Only super() inside a method of your own class, and judged by the object it is bound to.
            if not session.is_user_object(obj.__thisclass__):
                raise refusal(
                    "super() with a library class is not available in the sandbox; call the method "
                    "on the object itself"
                )
            target = obj.__self__
            stepped = super_method(obj, name)  # the base's C comparison or search, in steps (compare.py)
            if stepped is not None:
                return stepped
        if name.startswith("_"):
            if name in READABLE_DUNDERS:
                value = getattr(obj, name, None)
                if value is None or type(value) is str:
                    return value
                raise refusal(
                    f"attribute {name!r} of this object is not a string; the sandbox only hands out "
                    "names and docstrings"
                )
            if name in EXCEPTION_DUNDERS and isinstance(obj, BaseException):
                notes = getattr(obj, name, _RAISE)  # add_note() keeps them: a list of str
                if notes is _RAISE:
                    if default is not _RAISE:
                        return default
                    raise AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")
                if type(notes) is list and all(isinstance(note, str) for note in notes):
                    return [str.__str__(note) for note in notes]  # plain copies: no str subclass
                raise refusal(f"this exception's {name} is not a list of strings")
            if type(obj) is super and name in ALLOWED_DUNDER_METHODS:
                return getattr(obj, name)
            if not private_allowed(obj, name):
                raise refusal(
                    f"attribute {name!r} starts with '_': underscore attributes are not available "
                    "in the sandbox (except private attributes of your own classes)"
                )
        elif name in INSPECT_ATTRIBUTES:
            raise refusal(
                f"attribute {name!r} reaches frames or code objects, which the sandbox does not allow"
            )
        elif name in _SPECIAL:
            handled = _SPECIAL[name](target, name)
            if handled is not _RAISE:
                return handled
        try:
            value = getattr(obj, name)
        except AttributeError as exc:
            if default is not _RAISE:
                return default
            raise AttributeError(str(exc)) from None
        kind = type(value)
        if kind in _SHARED_CONTAINERS and isinstance(obj, type) and not session.is_user_object(obj):
            # A container held by a library class is shared state of the process: hand out a read-only view.
            return _SHARED_CONTAINERS[kind](value)
        return check_value(value, f"attribute {name!r}")

    formatter = SafeFormatter(
        guarded_getattr,
        lambda obj, key: guarded_getitem(obj, key),
        lambda value, spec: check_spec(value, spec),
    )

    def safe_format_method(text: Any) -> Callable[..., str]:
        def format(*args: Any, **kwargs: Any) -> str:  # noqa: A001 - mirrors str.format
            return formatter.vformat(str(text), args, kwargs)

        return format

    def safe_format_map(text: Any) -> Callable[[Any], str]:
        def format_map(mapping: Any) -> str:
            return formatter.vformat(str(text), (), mapping)

        return format_map

    def special_format(obj: Any, name: str) -> Any:
        is_text = isinstance(obj, (str, collections.UserString))
        is_text_type = isinstance(obj, type) and issubclass(obj, (str, collections.UserString))
        if is_text:
            return safe_format_method(obj) if name == "format" else safe_format_map(obj)
        if is_text_type:
            if name == "format":
                return lambda text, *a, **k: safe_format_method(text)(*a, **k)
            return lambda text, mapping: safe_format_map(text)(mapping)
        if isinstance(obj, string.Formatter) or (isinstance(obj, type) and issubclass(obj, string.Formatter)):
            raise refusal("string.Formatter is not available in the sandbox; use str.format or f-strings")
        return _RAISE

    def special_register(obj: Any, name: str) -> Any:
        if isinstance(obj, abc.ABCMeta) and not session.is_user_object(obj):
            raise refusal(
                "registering with a library's abstract base class would change shared state; "
                "subclass it instead"
            )
        return _RAISE

    def special_from_bytes(obj: Any, name: str) -> Any:
        if isinstance(obj, type) and issubclass(obj, int):
            return caps.from_bytes(obj)
        if isinstance(obj, int):
            return caps.from_bytes(type(obj))
        return _RAISE

    max_sequence = limits.max_sequence

    def special_text(obj: Any, name: str) -> Any:
        checked = text_method(obj, name, max_sequence)
        return _RAISE if checked is None else checked

    def special_data(obj: Any, name: str) -> Any:
        value = data_attribute(obj, name, session.write_output, limits.max_sequence)
        return _RAISE if value is NOT_HANDLED else check_value(value, f"attribute {name!r}")

    _SPECIAL: dict[str, Callable[[Any, str], Any]] = {
        **dict.fromkeys(DATA_NAMES, special_data),
        **dict.fromkeys(TEXT_METHODS, special_text),
        "format": special_format,
        "format_map": special_format,
        "get_field": special_formatter,
        "get_value": special_formatter,
        "vformat": special_formatter,
        "parse": special_formatter,
        "convert_field": special_formatter,
        "format_field": special_formatter,
        "obj": special_exception_obj,
        "func": special_partial,
        "args": special_partial,
        "keywords": special_partial,
        "register": special_register,
        "from_bytes": special_from_bytes,
        "elements": special_elements,
        "mro": special_mro,
        "fromkeys": special_fromkeys,
        "sort": special_sort,
        **dict.fromkeys(SEARCH_METHODS, special_search),
        **dict.fromkeys(KEYED_NAMES, special_keyed),
        **dict.fromkeys(CHECKED_NAMES | SET_METHODS, special_bulk),
        "as_integer_ratio": special_integer_ratio,
    }
    slow_names = frozenset(INSPECT_ATTRIBUTES) | frozenset(_SPECIAL)

    caps = Caps(limits)
    check_spec, safe_format, fstring_format = caps.check_spec, caps.format, caps.fstring_format
    safe_pow, safe_mul, safe_lshift, safe_mod = caps.pow, caps.mul, caps.lshift, caps.mod
    _INPLACE = caps.inplace

    def inplacevar(op: str, x: Any, y: Any) -> Any:
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        if op == "+=":
            x += y
            return x
        if op == "-=":
            kind = type(x)
            if kind is int or kind is float:
                x -= y
                return x
            return set_inplace(op, x, y)  # sets, frozensets and views in steps (setops.py)
        if op in _SET_INPLACE:
            return set_inplace(op, x, y)
        fn = _INPLACE.get(op)
        if fn is None:
            raise refusal(f"operator {op} is not supported")
        return fn(x, y)

    # -- items, writes, iteration -------------------------------------------------------------------------
    def guarded_getitem(obj: Any, key: Any) -> Any:
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        kind = type(key)
        if kind is str or kind is int:
            pass
        elif kind is tuple:
            if key is cheap_key[0]:
                pass
            elif len(key) > _SHORT_KEY:
                key = item_key(obj, key)  # a costly tuple key of a hash table: looked up in steps (keys.py)
            else:
                for item in key:
                    if type(item) not in _KEY_SCALARS:
                        key = item_key(obj, key)
                        break
                else:
                    cheap_key[0] = key
        elif kind is not slice:
            key = item_key(obj, key)
        value = obj[key]
        if type(value) in PLAIN:
            return value
        return check_value(value, "this item")

    def guarded_getitem_const(obj: Any, key: Any) -> Any:
        """`obj['name']` / `obj[3]` (policy.visit_Subscript: a str or int constant key, which C hashes and
        compares with a stored key in time bounded by the constant): `_getitem_` without its key guard."""
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        value = obj[key]
        if type(value) in PLAIN:
            return value
        return check_value(value, "this item")

    def guarded_write(obj: Any) -> Any:
        """`obj[k] = v` / `del obj[k]`."""
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        if type(obj) in WRITABLE_TYPES or type(obj) in DATA_WRITABLE or session.is_user_object(obj):
            return obj
        return refused_write(obj, attribute=False)

    def keyed_attr(obj: Any, name: str) -> Any:
        """`_kattr_(x, 'get')` (policy._keyed_call: the key is a constant or an exact str/int): the real C
        method when it is one (no wrapper is needed for such a key), else what `_getattr_` gives."""
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        if type(obj) is not super:
            try:
                value = getattr(obj, name)
            except AttributeError as exc:
                raise AttributeError(str(exc)) from None
            if type(value) is types.BuiltinMethodType:
                return value
        return guarded_getattr(obj, name)

    def keyed_call(obj: Any, name: str, key: Any, /, *rest: Any) -> Any:
        """`_kcall_(x, 'get', k, ...)`: `x.get(k, ...)` with a costly tuple key of a dict or set looked up in
        steps (keys.py)."""
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        methods = EXACT_TABLES.get(type(obj))
        method = None if methods is None else methods.get(name)
        kind = type(key)
        if method is not None:
            if kind is tuple:
                if key is not cheap_key[0]:
                    if len(key) > _SHORT_KEY:
                        return method(obj, item_key(obj, key), *rest)
                    for item in key:
                        if type(item) not in _KEY_SCALARS:
                            return method(obj, item_key(obj, key), *rest)
                    cheap_key[0] = key
            elif kind is frozenset or (kind is not int and kind is not str and issubclass(kind, tuple)):
                return method(obj, item_key(obj, key), *rest)
            return method(obj, key, *rest)
        if kind is str or kind is int:
            return keyed_attr(obj, name)(key, *rest)
        return guarded_getattr(obj, name)(key, *rest)

    def write_key(obj: Any, key: Any) -> Any:
        """`obj[key] = v` / `del obj[key]` (policy.visit_Subscript): the write check of `_write_`, and the
        key C is handed — a costly tuple key of a hash table is looked up in steps first (keys.py)."""
        if type(obj) not in WRITABLE_TYPES:
            guarded_write(obj)
        elif session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        kind = type(key)
        if kind is str or kind is int or key is cheap_key[0]:
            return key
        if kind is tuple and len(key) <= _SHORT_KEY:
            for item in key:
                if type(item) not in _KEY_SCALARS:
                    return item_key(obj, key)
            cheap_key[0] = key  # a short record of scalars
            return key
        return item_key(obj, key)

    def guarded_write_attr(obj: Any) -> Any:
        """`obj.a = v` / `del obj.a` / `setattr(obj, 'a', v)`."""
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        if type(obj) in WRITABLE_TYPES or session.is_user_object(obj):
            return obj
        if type(obj) in DATA_WRITABLE:
            return AttrWriter(obj, DATA_ATTR_WRITES.get(type(obj).__name__, frozenset()))
        return refused_write(obj, attribute=True)

    def guarded_setattr(obj: Any, name: str, value: Any) -> None:
        if type(name) is not str:
            raise TypeError("attribute name must be a string")
        if name.startswith("_") and not (private_allowed(obj, name)):
            raise refusal(f"attribute {name!r} starts with '_': it cannot be set in the sandbox")
        setattr(guarded_write_attr(obj), name, value)

    def guarded_delattr(obj: Any, name: str) -> None:
        if type(name) is not str:
            raise TypeError("attribute name must be a string")
        if name.startswith("_") and not (private_allowed(obj, name)):
            raise refusal(f"attribute {name!r} starts with '_': it cannot be deleted in the sandbox")
        delattr(guarded_write_attr(obj), name)

    def guarded_getiter(obj: Any) -> Any:
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        return iter(obj)

    def guarded_apply(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        return fn(*args, **kwargs)

    register_apply(guarded_apply.__code__)  # `f(*a)` is the cell's own call (origin.py)

    def iter_unpack_sequence(it: Any, spec: Any, _getiter_: Any = guarded_getiter) -> Any:
        return guarded_iter_unpack_sequence(it, spec, guarded_getiter)

    def unpack_sequence(it: Any, spec: Any, _getiter_: Any = guarded_getiter) -> Any:
        return guarded_unpack_sequence(it, spec, guarded_getiter)

    def guarded_hasattr(obj: Any, name: Any) -> bool:
        if session.cancelled is not None:
            raise CellTimeout(session.cancelled)
        if type(name) is not str:
            raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
        # Existence only (nothing is handed out), so dunder names such as '__len__' may be asked about.
        if name.startswith("_") or name in INSPECT_ATTRIBUTES:
            return hasattr(obj, name)
        try:
            guarded_getattr(obj, name)
        except AttributeError:
            return False
        return True

    def guarded_getattr_builtin(obj: Any, name: Any, *default: Any) -> Any:
        if len(default) > 1:
            raise TypeError(f"getattr expected at most 3 arguments, got {2 + len(default)}")
        return guarded_getattr(obj, name, *default)

    # -- print --------------------------------------------------------------------------------------------
    class Printer:
        """What `print(...)` calls in a cell: writes to the kernel's stdout under the per-cell output cap."""

        __slots__ = ("parts", "kept")

        def __init__(self, _getattr_: Any = None) -> None:
            self.parts: list[str] = []
            self.kept = 0  # characters in `parts`, kept as a count: each print costs O(1), not O(output)

        def _call_print(
            self,
            *objects: Any,
            sep: str | None = " ",
            end: str | None = "\n",
            file: Any = None,
            flush: bool = False,
        ) -> None:
            if session.cancelled is not None:
                raise CellTimeout(session.cancelled)
            if sep is not None and type(sep) is not str:
                raise TypeError(f"sep must be None or a string, not {type(sep).__name__}")
            if end is not None and type(end) is not str:
                raise TypeError(f"end must be None or a string, not {type(end).__name__}")
            text = (" " if sep is None else sep).join(map(str, objects)) + ("\n" if end is None else end)
            if file is not None:
                guarded_getattr(file, "write")(text)
                return
            if len(objects) == 1 and session.shown.consume(objects[0]):
                return  # print(SHOW_VARS()): the helper printed it already (sandbox/shown.py)
            session.write_output(text)
            if self.kept < (limits.output_bytes or 1_000_000):
                self.parts.append(text)
                self.kept += len(text)

        def __call__(self) -> str:
            return "".join(self.parts)

    return {
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getitem_c_": guarded_getitem_const,
        "_write_": guarded_write,
        "_wkey_": write_key,
        "_kattr_": keyed_attr,
        "_kcall_": keyed_call,
        "_write_attr_": guarded_write_attr,
        "_getiter_": guarded_getiter,
        "_iter_unpack_sequence_": iter_unpack_sequence,
        "_unpack_sequence_": unpack_sequence,
        "_inplacevar_": inplacevar,
        "_apply_": guarded_apply,
        "_print_": Printer,
        "_cancel_check_": cancel_check,
        # lambdas: `body if _cell_thread_.in_cell else _outside_cell_()` (policy.visit_Lambda)
        "_cell_thread_": cell_thread,
        "_outside_cell_": outside_cell,
        "_mark_class_": mark_class,
        "_class_of_": SafeType,
        "_pow_": safe_pow,
        "_mul_": safe_mul,
        "_lshift_": safe_lshift,
        "_mod_": safe_mod,
        "_format_": fstring_format,
        "_int_bits_": caps.int_bits,
        # the numeric fast paths' type test (policy._fast_test): exact int/float only, by identity
        "_type_": type,
        "_int_": int,
        "_float_": float,
        "_str_": str,
        "_range_ok_": range_ok,
        **COMPARE_GUARDS,
        "_set_display_": set_display,
        "_set_comp_": set_comp,
        "_dict_comp_": dict_comp,
        "_dict_display_": dict_display,
        **SET_GUARDS,
        # builtins built on the guards
        "getattr": guarded_getattr_builtin,
        "hasattr": guarded_hasattr,
        "setattr": guarded_setattr,
        "delattr": guarded_delattr,
        "format": safe_format,
        "pow": safe_pow,
    }
