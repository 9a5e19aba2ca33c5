"""Library paths that evaluate strings or resolve names for a cell (eval_payloads.py), run in-process.

Every escape payload is refused or fails with an ordinary error, never shows a canary, and leaves the
namespace's earlier variables in place; every control runs.
"""

from __future__ import annotations

import pytest

from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source
from tests.sandbox.eval_payloads import EVAL_PAYLOADS
from tests.sandbox.payloads import CANARY_VALUE, Payload, render
from tests.sandbox.test_payloads import check

FILE_TEXT = f"api_key={CANARY_VALUE}"


@pytest.mark.parametrize("payload", EVAL_PAYLOADS, ids=[f"{p.category}-{p.id}" for p in EVAL_PAYLOADS])
def test_string_eval_payload(session: SandboxSession, secret_file: str, payload: Payload) -> None:
    ns = new_namespace(session)
    assert run_source("kept = 41", ns, session).error is None
    outcome = run_source(render(payload, secret_file), ns, session)
    check(payload, outcome)
    assert FILE_TEXT not in f"{outcome.stdout}{outcome.value_repr}{outcome.error}"
    after = run_source("kept + 1", ns, session)
    assert after.error is None and after.value_repr == "42", after


def test_the_families_are_covered() -> None:
    categories = {p.category for p in EVAL_PAYLOADS}
    assert {"sdispatch", "typing_str", "dataclass", "namedtuple", "enum", "operator"} <= categories
    assert {"format_str", "template", "copyhook", "parse", "control"} <= categories
    assert len([p for p in EVAL_PAYLOADS if p.category == "sdispatch"]) >= 15


def test_singledispatch_register_never_calls_get_type_hints(session: SandboxSession, monkeypatch) -> None:
    """Even an annotation that is already a class is read directly, not through typing.get_type_hints."""
    import typing

    def boom(*args, **kwargs):
        raise AssertionError("get_type_hints was called")

    monkeypatch.setattr(typing, "get_type_hints", boom)
    ns = new_namespace(session)
    code = (
        "import functools\n@functools.singledispatch\ndef f(x):\n    return 0\n"
        "@f.register\ndef g(x: int):\n    return 1\nf(5)"
    )
    outcome = run_source(code, ns, session)
    assert outcome.error is None and outcome.value_repr == "1", outcome
