"""Completion and lookup rules checked without a kernel, including a property test over arbitrary text.

Public names only; nothing is evaluated; properties and other code-running descriptors are never read.
"""

from __future__ import annotations

from functools import cached_property

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlm_kernel.introspect import LookupRefused, complete, resolve_path
from rlm_kernel.sandbox import SandboxSession, new_namespace

RAN: list[str] = []


class Sample:
    width = 3

    @property
    def prop(self) -> int:
        RAN.append("prop")
        return 1

    @cached_property
    def cached(self) -> list[int]:
        RAN.append("cached")
        return [1]

    def method(self) -> int:
        return 1


@pytest.fixture(scope="module")
def ns() -> dict:
    namespace = new_namespace(SandboxSession())
    namespace.update({"sample": Sample(), "data": {"k": [1]}, "rlm line magic": print})
    return namespace


def test_public_names_resolve_and_private_ones_do_not(ns: dict) -> None:
    assert resolve_path(ns, "data.keys")[1] == ns["data"].keys
    assert resolve_path(ns, "len")[1] is len
    private = ("sample.__class__", "data.__class__", "_getattr_", "__builtins__", "sample._x", "a b", "x[0]")
    for dotted in private:
        with pytest.raises(LookupRefused):
            resolve_path(ns, dotted)


def test_descriptors_that_run_code_are_not_read(ns: dict) -> None:
    RAN.clear()
    assert isinstance(resolve_path(ns, "sample.prop")[1], property)
    assert isinstance(resolve_path(ns, "sample.cached")[1], cached_property)
    with pytest.raises(LookupRefused):
        resolve_path(ns, "sample.cached.append")
    assert set(complete(ns, set(), "sample.", None)["matches"]) >= {"width", "prop", "cached", "method"}
    assert RAN == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abcdegiklmnoprstuwxyz_.%()[]'\" 0123")), max_size=24))
def test_completion_never_offers_private_or_hidden_names(ns: dict, code: str) -> None:
    reply = complete(ns, {"rlm line magic"}, code, None, (["time"], ["time"]))
    assert reply["status"] == "ok"
    assert 0 <= reply["cursor_start"] <= reply["cursor_end"] == len(code)
    for match in reply["matches"]:
        name = match.lstrip("%")
        assert not name.startswith("_") and " " not in name, (code, match)
