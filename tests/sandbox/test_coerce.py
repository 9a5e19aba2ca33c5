"""Boundary coercion (sandbox/coerce.py): subclasses become exact built-ins and none of their methods run.

Every subclass below records each of its methods that runs; after coercion the record must be empty.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlm_kernel.repl.loading import context_source as _context_source
from rlm_kernel.sandbox.coerce import (
    CoercionError,
    exact_float,
    exact_int,
    exact_list_of_str,
    exact_str,
    optional_str,
    plain_data,
)

ran: list[str] = []


def _recording(base: type, names: tuple[str, ...]) -> type:
    def make(name: str):
        original = getattr(base, name, None)

        def method(self, *args, **kwargs):
            ran.append(f"{base.__name__}.{name}")
            return original(self, *args, **kwargs) if original is not None else None

        return method

    return type(f"Lying{base.__name__}", (base,), {n: make(n) for n in names})


S = _recording(
    str,
    ("__str__", "__len__", "__iter__", "__getitem__", "encode", "strip", "startswith", "__eq__", "__add__"),
)
S.__hash__ = lambda self: ran.append("str.__hash__") or str.__hash__(self)  # type: ignore[method-assign]
I = _recording(int, ("__index__", "__int__", "__add__", "__radd__", "__float__", "__lt__", "__repr__"))  # noqa: E741
F = _recording(float, ("__float__", "__add__", "__radd__", "__repr__"))
L = _recording(list, ("__iter__", "__len__", "__getitem__"))
T = _recording(tuple, ("__iter__", "__len__", "__getitem__"))
D = _recording(dict, ("__iter__", "__len__", "__getitem__", "items", "keys", "values"))
B = _recording(bytes, ("__iter__", "__len__", "__getitem__"))


@pytest.fixture(autouse=True)
def clear() -> None:
    ran.clear()


def test_exact_str_copies_subclasses_without_calling_them() -> None:
    value = exact_str(S("hello"), "x")
    assert type(value) is str and value == "hello" and ran == []
    assert optional_str(None, "x") is None
    assert type(optional_str(S("a"), "x")) is str and ran == []


@pytest.mark.parametrize("bad", [1, b"x", None, ["a"], object(), 1.5])
def test_exact_str_refuses_other_types(bad: object) -> None:
    with pytest.raises(CoercionError, match="must be a str") as info:
        exact_str(bad, "the prompt")
    assert isinstance(info.value, TypeError)


def test_exact_int_and_float() -> None:
    assert type(exact_int(I(7), "n")) is int and exact_int(I(7), "n") == 7
    assert type(exact_float(F(2.5), "x")) is float and exact_float(F(2.5), "x") == 2.5
    assert type(exact_float(I(2), "x")) is float
    assert exact_int(None, "n", allow_none=True) is None
    assert ran == []
    for bad in (True, 1.5, "3", None):
        with pytest.raises(CoercionError):
            exact_int(bad, "n")
    for bad in (False, "1.5", None, [1]):
        with pytest.raises(CoercionError):
            exact_float(bad, "x")


def test_exact_list_of_str() -> None:
    for value in (L([S("a"), "b"]), T((S("a"), "b")), ["a", S("b")]):
        out = exact_list_of_str(value, "prompts")
        assert type(out) is list and all(type(x) is str for x in out) and out == ["a", "b"]
    assert ran == []
    for bad in ("ab", {"a": 1}, (x for x in ["a"]), ["a", 1], {"a"}):
        with pytest.raises(CoercionError):
            exact_list_of_str(bad, "prompts")


def test_plain_data_deep_copies_through_base_slots() -> None:
    key = S("k")
    value = L([S("a"), T((I(1), F(2.0), B(b"z"))), D({"d": 1})])
    data = {key: value}
    ran.clear()  # building the dict hashed the key here, in the test
    out = plain_data(D(data), "data")
    assert ran == []
    assert out == {"k": ["a", (1, 2.0, b"z"), {"d": 1}]}
    k = next(iter(out))
    assert type(k) is str and type(out[k]) is list and type(out[k][1]) is tuple
    assert [type(x) for x in out[k][1]] == [int, float, bytes] and type(out[k][2]) is dict


@pytest.mark.parametrize("bad", [object(), [1, object()], {"a": {1, 2}}, (x for x in [1]), Path("x")])
def test_plain_data_refuses_objects(bad: object) -> None:
    with pytest.raises(CoercionError, match="plain data"):
        plain_data(bad, "the context")


def test_plain_data_caps_depth() -> None:
    deep: list = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(CoercionError, match="nested"):
        plain_data(deep, "the context")


class _PathLike:
    def __init__(self, path: object) -> None:
        self.path = path

    def __fspath__(self) -> object:
        return self.path


def test_context_source_reads_path_likes_as_exact_str() -> None:
    assert _context_source(Path("a/b.txt")) == os.path.join("a", "b.txt")
    out = _context_source(_PathLike(S("notes.txt")))
    assert type(out) is str and out == "notes.txt" and ran == []
    with pytest.raises(CoercionError, match="bytes"):
        _context_source(_PathLike(b"notes.txt"))
    assert type(_context_source(S("some text"))) is str and ran == []
    assert _context_source(L([S("a")])) == ["a"] and ran == []
