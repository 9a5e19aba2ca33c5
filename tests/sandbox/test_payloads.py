"""Every payload of payloads.py run in-process through `run_source`, checked against its expected outcome.

Kernel-only and isolated payloads run in test_payloads_kernel.py; canaries must never appear in any output.
"""

from __future__ import annotations

import pytest

from rlm_kernel.sandbox import ExecOutcome, SandboxSession, new_namespace, run_source
from tests.sandbox.payloads import (
    BLOCKED,
    CANARY_VALUE,
    LIMIT,
    LIMIT_ERRORS,
    OK,
    PAYLOADS,
    REFUSAL_ERRORS,
    REFUSED,
    TRUNCATED,
    Payload,
    render,
)

IN_PROCESS = [p for p in PAYLOADS if not p.kernel_only and not p.isolated]


def error_name(outcome: ExecOutcome) -> str | None:
    """The exception class name of a failed block ('SandboxError', 'CellTimeout', 'ValueError', ...)."""
    if outcome.error is None:
        return None
    last = outcome.error.strip().splitlines()[-1]
    return last.split(":", 1)[0].strip()


def check(payload: Payload, outcome: ExecOutcome) -> None:
    text = f"{outcome.stdout}\n{outcome.value_repr}\n{outcome.error}"
    assert CANARY_VALUE not in text, f"canary leaked by {payload.id}"
    name = error_name(outcome)
    if payload.expect == REFUSED:
        assert name in REFUSAL_ERRORS, outcome
        assert outcome.error.count("\n") == 0, "a refusal is one line"
    elif payload.expect == LIMIT:
        assert name in LIMIT_ERRORS, outcome
    elif payload.expect == BLOCKED:
        assert outcome.error is not None, outcome
        assert name not in (None, "KeyboardInterrupt"), outcome
    elif payload.expect == OK:
        assert outcome.error is None, outcome
    elif payload.expect == TRUNCATED:
        assert outcome.error is None, outcome
        assert "output truncated" in outcome.stdout, outcome.stdout[-300:]
    else:  # pragma: no cover
        raise AssertionError(f"unknown expectation {payload.expect}")
    if payload.match is not None:
        assert payload.match in text, outcome


def test_there_are_enough_payloads() -> None:
    attacks = [p for p in PAYLOADS if p.category != "control"]
    controls = [p for p in PAYLOADS if p.category == "control"]
    assert len(attacks) >= 80 and len(controls) >= 15
    categories = {p.category for p in attacks}
    assert {
        "dunder",
        "computed",
        "format",
        "pivot",
        "gadget",
        "type",
        "frames",
        "generator",
        "imports",
        "asyncio",
        "shadow",
        "except_star",
        "bomb",
        "ipython",
    } <= categories
    assert len({(p.category, p.id) for p in PAYLOADS}) == len(PAYLOADS), "payload ids must be unique"


def test_every_allowlisted_module_has_a_pivot_payload() -> None:
    from rlm_kernel.sandbox import ALLOWED_MODULES

    pivots = " ".join(p.code for p in PAYLOADS if p.category == "pivot")
    missing = [m for m in ALLOWED_MODULES if f"import {m}" not in pivots and f"from {m}" not in pivots]
    assert not missing, f"no pivot payload for {missing}"


@pytest.mark.parametrize("payload", IN_PROCESS, ids=[f"{p.category}-{p.id}" for p in IN_PROCESS])
def test_payload(payload: Payload, session: SandboxSession, secret_file: str) -> None:
    namespace = new_namespace(session)
    outcome = run_source(render(payload, secret_file), namespace, session)
    check(payload, outcome)
    # The session is still usable after whatever the payload did.
    after = run_source("print(sum([1, 2, 3]))", namespace, session)
    assert after.error is None and after.stdout == "6\n", after


def test_variables_set_before_an_error_stay(session: SandboxSession) -> None:
    namespace = new_namespace(session)
    outcome = run_source("kept = 41\nkept += 1\nraise ValueError('boom')\nlost = 1", namespace, session)
    assert outcome.error is not None and outcome.error.endswith("ValueError: boom")
    assert namespace["kept"] == 42 and "lost" not in namespace


def test_traceback_shows_only_the_blocks_lines(session: SandboxSession) -> None:
    namespace = new_namespace(session)
    outcome = run_source("import json\ndef f(s):\n    return json.loads(s)\nf('{bad')", namespace, session)
    assert outcome.error is not None
    assert outcome.error.splitlines()[0] == "Traceback (most recent call last):"
    assert "line 4" in outcome.error and "line 3, in f" in outcome.error
    assert "JSONDecodeError" in outcome.error
    assert "site-packages" not in outcome.error and "/json/" not in outcome.error
    assert "rlm_kernel" not in outcome.error


def test_refusal_message_format(session: SandboxSession) -> None:
    outcome = run_source("x = 1\ny = 2\nz = x.__class__", new_namespace(session), session)
    assert outcome.error == (
        "SandboxError: line 3: 'z = x.__class__' — attribute '__class__' starts with '_': underscore "
        "attributes are not available in the sandbox"
    )


def test_runtime_refusal_points_at_the_users_line(session: SandboxSession) -> None:
    outcome = run_source("n = '__cl' + 'ass__'\n\ngetattr(1, n)", new_namespace(session), session)
    assert outcome.error is not None and outcome.error.startswith("SandboxError: line 3: 'getattr(1, n)' — ")


def test_import_refusal_lists_available_modules(session: SandboxSession) -> None:
    outcome = run_source("import os", new_namespace(session), session)
    assert outcome.error is not None
    assert "module 'os' is not available" in outcome.error
    assert "json" in outcome.error and "re," in outcome.error


def test_last_expression_value_and_print(session: SandboxSession) -> None:
    outcome = run_source("print('a', 'b', sep='-', end='!')\n[1, 2]", new_namespace(session), session)
    assert outcome == ExecOutcome(stdout="a-b!", value_repr="[1, 2]", error=None)


def test_random_is_per_session() -> None:
    from rlm_kernel.sandbox import Limits

    a, b = SandboxSession(Limits(memory_mb=0), seed=3), SandboxSession(Limits(memory_mb=0), seed=3)
    ns_a, ns_b = new_namespace(a), new_namespace(b)
    run_source("import random\nrandom.seed(5)", ns_a, a)
    first = run_source("import random\nrandom.random()", ns_a, a).value_repr
    second = run_source("import random\nrandom.random()", ns_b, b).value_repr
    import random

    assert first == repr(random.Random(5).random())
    assert second == repr(random.Random(3).random()), "seeding one session must not touch another"
    assert a.facades["random"] is not b.facades["random"]


def test_facades_are_not_modules(session: SandboxSession) -> None:
    import types

    for name, facade in session.facades.items():
        assert not isinstance(facade, types.ModuleType), name
        for attr in dir(facade):
            value = getattr(facade, attr)
            assert not isinstance(value, types.ModuleType), f"{name}.{attr} is a module"


def test_user_classes_cannot_modify_library_classes(session: SandboxSession) -> None:
    namespace = new_namespace(session)
    outcome = run_source("import json\njson.JSONEncoder.item_separator = ';'", namespace, session)
    assert outcome.error is not None and outcome.error.startswith("SandboxError")
    import json

    assert json.JSONEncoder.item_separator == ", "


def test_syntax_error_is_one_line(session: SandboxSession) -> None:
    outcome = run_source("x = 1\ny = (", new_namespace(session), session)
    assert outcome.error is not None and outcome.error.startswith("SyntaxError: line 2: 'y = (' — ")
    assert "\n" not in outcome.error and "<repl>" not in outcome.error


def test_docstrings_survive(session: SandboxSession) -> None:
    source = (
        'def f():\n    """Doc."""\n    return 1\nclass A:\n    """Class doc."""\nf.__doc__, A.__doc__, f()'
    )
    outcome = run_source(source, new_namespace(session), session)
    assert outcome.value_repr == "('Doc.', 'Class doc.', 1)", outcome


def test_kernel_objects_are_never_handed_out(session: SandboxSession) -> None:
    """Whatever a helper returns, attributes leading to the shell, kernel, comms or streams are refused."""
    import types

    from ipykernel.iostream import OutStream
    from ipykernel.kernelbase import Kernel
    from IPython.core.interactiveshell import InteractiveShell

    fresh = session  # created before some of these imports: the guard notices new modules
    namespace = new_namespace(fresh)
    namespace["holder"] = types.SimpleNamespace(
        shell=object.__new__(InteractiveShell),
        kernel=object.__new__(Kernel),
        stream=OutStream.__new__(OutStream),
    )
    for attr in ("shell", "kernel", "stream"):
        outcome = run_source(f"holder.{attr}", namespace, fresh)
        assert outcome.error is not None and outcome.error.startswith("SandboxError"), outcome
        assert "does not hand out" in outcome.error
