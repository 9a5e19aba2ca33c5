"""`rootloop.bindings`: what a --shared block bound in the notebook; the builtins it shadowed."""

from __future__ import annotations

import pytest

from rlm_kernel.rootloop.bindings import DELETED, HELPER, NEW, REBOUND, REPLACED, SHADOWED, Bindings, note
from rlm_kernel.sandbox.errors import SandboxError
from rlm_kernel.sandbox.filenames import register_sandboxed_filename
from rlm_kernel.sandbox.origin import is_model_filename, register_model_filename


def block(bound: Bindings, ns: dict, change) -> list[str]:  # noqa: ANN001 - a function changing ns
    before = bound.before(ns)
    change(ns)
    return bound.after(ns, before)


def test_each_kind_of_binding_is_recorded_and_builtins_are_undone() -> None:
    helper = object()
    ns = {"load_context": helper, "mine": 1, "gone": 2, "input": "the person's own", "_print": None}
    ns["summarize"] = lambda x: x
    bound = Bindings({"load_context": helper})

    def change(ns: dict) -> None:
        ns.update(load_context=print, mine=10, fresh=[1], len=lambda x: 0, input="model's", _guard=1)
        ns["summarize"] = print
        del ns["gone"]

    notes = block(bound, ns, change)
    assert bound.done == {
        "load_context": HELPER,
        "mine": REBOUND,
        "summarize": REPLACED,
        "fresh": NEW,
        "len": SHADOWED,
        "input": SHADOWED,
        "gone": DELETED,
    }
    assert "len" not in ns and ns["input"] == "the person's own"  # removed, or the person's value back
    assert ns["load_context"] is print  # helpers are left to preload.repair, which runs next
    assert notes and "input, len" in notes[0]
    line = note(bound.done)
    assert line.startswith("model-written code bound in your namespace: ")
    assert "fresh" in line and "len (shadowed a builtin: removed)" in line and "_guard" not in line


def test_later_blocks_keep_the_first_kind_and_drop_what_model_code_made_and_removed() -> None:
    ns = {"mine": 1}
    bound = Bindings({})
    block(bound, ns, lambda ns: ns.update(tmp=1))
    block(bound, ns, lambda ns: ns.update(tmp=2))  # still new: model code made it
    assert bound.done == {"tmp": NEW}
    block(bound, ns, lambda ns: ns.pop("tmp"))
    assert bound.done == {}
    block(bound, ns, lambda ns: ns.pop("mine"))
    block(bound, ns, lambda ns: ns.update(mine=3))
    assert bound.done == {"mine": REBOUND}
    assert note({}) == ""


def test_the_kernels_own_bindings_are_not_listed() -> None:
    ctx = "loaded text"
    protected = {"context": "before"}
    bound = Bindings(protected)
    ns = {"context": "before"}

    def load(ns: dict) -> None:  # what load_context does from a block: namespace and snapshot together
        ns["context"] = protected["context"] = ctx

    block(bound, ns, load)
    assert bound.done == {}


def test_model_filenames_are_new_and_never_a_persons_cell() -> None:
    register_sandboxed_filename("/tmp/ipykernel_1/cell-origin-test.py")
    with pytest.raises(SandboxError):
        register_model_filename("/tmp/ipykernel_1/cell-origin-test.py")
    assert not is_model_filename("/tmp/ipykernel_1/cell-origin-test.py")
    register_model_filename("<rlm turn 1>#origin-test")
    assert is_model_filename("<rlm turn 1>#origin-test")
