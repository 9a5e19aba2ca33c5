"""Typed answers (`rlm_run(..., returns=T)`, `%%rlm --returns NAME`): which types, checking and converting.

`T` is `int`, `float`, `bool`, `str`, `list`/`list[X]`, `dict`/`dict[K, V]` or a dataclass defined in the
notebook (its fields typed with the same kinds). A FINAL value is checked against `T`; text (a prose FINAL, or
a str given for a non-str type) is read as JSON, else as a Python literal, then checked. A mismatch gives a
reason that is fed back to the root.

Kernel code never calls a method of a value the model made: values are checked by exact type, and the only
notebook code run is a dataclass's own constructor, inside the run (the cell's limits) as model code.
"""

from __future__ import annotations

import ast
import json
import types
import typing

from rlm_kernel.sandbox.safe_int import REAL_CLASSES

__all__ = ["AnswerTypeError", "check_type", "convert", "describe", "prompt_line", "rejection", "text_of"]

_SCALARS = (int, float, bool, str)
_MAX_DEPTH = 8


class AnswerTypeError(ValueError):
    """Why a value does not fit the requested answer type (text fed back to the root)."""


def _dataclass_fields(t: object) -> dict | None:
    """The fields of a notebook dataclass (an exact `type` whose own dict holds them), else None."""
    if type(t) is not type:
        return None
    fields = type.__dict__["__dict__"].__get__(t).get("__dataclass_fields__")
    return fields if type(fields) is dict else None


def _generic(t: object) -> tuple[object, tuple] | None:
    if type(t) is not types.GenericAlias:  # list[int], dict[str, int]: exact, so nothing of the cell's runs
        return None
    origin = typing.get_origin(t)
    if origin is None:
        return None
    return origin, typing.get_args(t)


def _real(t: object) -> object:
    """A cell's `int`, `dict`, `set` … are the sandbox's checked classes (sandbox/safe_int.py, bulk.py); as
    answer types they are the real classes (`dict[str, int]` too)."""
    if type(t) is types.GenericAlias:
        origin = t.__origin__
        real = next((r for checked, r in REAL_CLASSES.items() if origin is checked), None)
        return t if real is None else types.GenericAlias(real, t.__args__)
    return next((real for checked, real in REAL_CLASSES.items() if t is checked), t)


def _one_of(value: object, *options: object) -> bool:
    """Identity membership (`in` would call a cell object's `__eq__`)."""
    return any(value is o for o in options)


def check_type(t: object, depth: int = 0) -> object:
    """`t` if it is a supported answer type, else ValueError saying what is supported."""
    t = _real(t)
    if depth > _MAX_DEPTH:
        raise ValueError("returns: the answer type is nested too deeply")
    if _one_of(t, *_SCALARS, list, dict):
        return t
    generic = _generic(t)
    if generic is not None and _one_of(generic[0], list, dict):
        origin, args = generic
        if origin is list and len(args) != 1 or origin is dict and len(args) != 2:
            raise ValueError(f"returns: {describe(t)} needs list[X] or dict[K, V]")
        for arg in args:
            check_type(arg, depth + 1)
        return t
    if _dataclass_fields(t) is not None:
        return t
    raise ValueError(
        "returns must be int, float, bool, str, list[...], dict[...] or a dataclass defined in the "
        f"notebook, got {describe(t)}"
    )


def describe(t: object) -> str:
    """A short name for an answer type: `int`, `list[str]`, `dict[str, int]`, the dataclass's name."""
    t = _real(t)
    if type(t) is type:
        return type.__dict__["__name__"].__get__(t)
    if type(t) is str:
        return t
    generic = _generic(t)
    if generic is not None and type(generic[0]) is type:
        return f"{describe(generic[0])}[{', '.join(describe(a) for a in generic[1])}]"
    return f"a {type(t).__name__}" if type(type(t)) is type else "an object"


def prompt_line(t: object) -> str:
    """What the system prompt says about the answer's type."""
    line = f"The answer must be {_a(describe(t))}: give FINAL(value) with a value of that type "
    line += "(or its JSON text)."
    fields = _dataclass_fields(t)
    if fields is not None:
        names = ", ".join(f"{n}: {describe(getattr(f, 'type', object))}" for n, f in fields.items())
        line += f" {describe(t)} has the fields {names}: give a dict (or JSON object) with them."
    return line


def rejection(t: object, reason: str) -> str:
    """The note fed back when a FINAL does not fit."""
    return (
        f"FINAL(...) rejected: the answer must be {_a(describe(t))}, but {reason}. Give FINAL(value) with a "
        f"value of type {describe(t)} (or its JSON text)."
    )


def _parse(text: str, t: object) -> object:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").partition("\n")[2] or stripped.strip("`")
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise AnswerTypeError(f"the text {_short(text)} is not JSON (or a Python literal)") from None


def _a(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _kind(value: object) -> str:
    kind = type(value)
    return type.__dict__["__name__"].__get__(kind) if type(kind) is type else "object"


def _short(value: object) -> str:
    text = repr(value) if _one_of(type(value), str, int, float, bool) or value is None else _kind(value)
    return text if len(text) <= 80 else text[:80] + "…"


def convert(value: object, t: object, depth: int = 0) -> object:
    """`value` as a `t`, or AnswerTypeError with the reason."""
    t = _real(t)
    if depth > _MAX_DEPTH:
        raise AnswerTypeError("the value is nested too deeply")
    kind = type(value)
    if t is typing.Any:
        return _plain(value)
    if t is str:
        if kind is str:
            return value
        raise AnswerTypeError(f"got a {_kind(value)}, not a str")
    if kind is str and t is not str:
        text = value.strip()
        if t is bool and text.lower() in ("true", "false"):
            return text.lower() == "true"
        try:
            parsed = _parse(text, t)
        except AnswerTypeError:
            if depth:
                raise AnswerTypeError(f"{_short(value)} is not {_a(describe(t))}") from None
            raise
        return convert(parsed, t, depth + 1)
    if t is bool:
        if kind is bool:
            return value
        raise AnswerTypeError(f"{_short(value)} is not a bool (true or false)")
    if t is int:
        if kind is int:
            return value
        if kind is float and value.is_integer():
            return int(value)
        raise AnswerTypeError(f"{_short(value)} is not an int")
    if t is float:
        if _one_of(kind, int, float):
            return float(value)
        raise AnswerTypeError(f"{_short(value)} is not a number")
    if t is list or t is dict:
        return convert(value, list[typing.Any] if t is list else dict[typing.Any, typing.Any], depth)
    generic = _generic(t)
    if generic is not None:
        origin, args = generic
        if origin is list:
            if not _one_of(kind, list, tuple):
                raise AnswerTypeError(f"{_short(value)} is not a list")
            out = []
            for i, item in enumerate(value):
                try:
                    out.append(convert(item, args[0], depth + 1))
                except AnswerTypeError as err:
                    raise AnswerTypeError(f"item {i}: {err}") from None
            return out
        if origin is dict:
            if kind is not dict:
                raise AnswerTypeError(f"{_short(value)} is not a dict")
            result = {}
            for key, item in value.items():
                try:
                    k = _key(key, args[0], depth)
                    result[k] = convert(item, args[1], depth + 1)
                except AnswerTypeError as err:
                    raise AnswerTypeError(f"key {_short(key)}: {err}") from None
            return result
    fields = _dataclass_fields(t)
    if fields is not None:
        return _dataclass(value, t, fields, depth)
    raise AnswerTypeError(f"the answer type {describe(t)} is not supported")


def _plain(value: object) -> object:
    """An item of a bare list/dict, copied as plain data (no method of a cell's object runs)."""
    from rlm_kernel.sandbox.coerce import CoercionError, plain_data

    try:
        return plain_data(value, "the answer")
    except CoercionError as err:
        raise AnswerTypeError(str(err)) from None


def _key(key: object, t: object, depth: int) -> object:
    t = _real(t)
    if t is int and type(key) is str:
        try:
            return int(key.strip())
        except ValueError:
            raise AnswerTypeError(f"{_short(key)} is not an int") from None
    return convert(key, t, depth + 1)


_BY_NAME = {"int": int, "float": float, "bool": bool, "str": str, "list": list, "dict": dict}


def _dataclass(value: object, t: type, fields: dict, depth: int) -> object:
    from rlm_kernel.sandbox.origin import model_code

    if type(value) is t:
        return value
    if type(value) is not dict:
        raise AnswerTypeError(f"{_short(value)} is not {_a(describe(t))} or a dict of its fields")
    if not all(type(k) is str for k in value):
        raise AnswerTypeError(f"the keys of a {describe(t)} dict must be field names (str)")
    unknown = [k for k in value if k not in fields]
    if unknown:
        raise AnswerTypeError(f"{describe(t)} has no field {_short(unknown[0])}")
    kwargs = {}
    for name, f in fields.items():
        if name not in value:
            continue
        ftype = getattr(f, "type", typing.Any)
        ftype = _BY_NAME.get(ftype, typing.Any) if type(ftype) is str else ftype
        if ftype is typing.Any:
            kwargs[name] = value[name]
            continue
        try:
            check_type(ftype)
        except ValueError:
            ftype = typing.Any  # a field of another kind is passed as it is
        try:
            kwargs[name] = convert(value[name], ftype, depth + 1)
        except AnswerTypeError as err:
            raise AnswerTypeError(f"field {name!r}: {err}") from None
    try:
        with model_code():  # the notebook's constructor, with values the model chose
            return t(**kwargs)
    except Exception as err:  # noqa: BLE001 - a missing field or the class's own check, fed back
        raise AnswerTypeError(f"{describe(t)}(...) refused the fields: {type(err).__name__}: {err}") from None


def text_of(value: object) -> str:
    """An answer as text: a str as is, a number or bool by str(), anything else by its repr (run as model
    code: a notebook class's own repr may run)."""
    from rlm_kernel.sandbox.coerce import exact_str
    from rlm_kernel.sandbox.origin import model_code

    if type(value) is str:
        return value
    if type(value) is int or type(value) is float or type(value) is bool:
        return str(value)
    with model_code():
        return exact_str(repr(value), "repr() of the answer")
