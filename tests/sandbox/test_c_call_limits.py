"""Red team 7: single C calls on a tuple nested with sharing (`t = (t, t)` forty times: 80 objects, 2**40
visits) that the 1 s time limit cannot stop. Each payload runs in a child process (no CPU backstop
in-process), which must report a limit error within a few seconds; a hang is killed after `_WAIT` seconds.

Fixed: json.dumps / JSONEncoder (payloads.JSON_ATTACKS); the text of an exception whose argument is such a
tuple (`raise ValueError(t)`, `assert False, t`: `str(exc)` is one C `tuple.__repr__`, run by the runner's
traceback formatting after the cell's frames are gone, where the timers did not raise; now
`sandbox/error_text.py` renders it where they do).
Open (strict xfail): difflib's `SequenceMatcher`, which hashes the items of its sequences in C (`b2j`).
"""

from __future__ import annotations

import multiprocessing
import time

import pytest

from tests.sandbox.payloads import LIMIT_ERRORS

_NEST = "t = ()\nfor _ in range(40):\n    t = (t, t)\n"
_WAIT = 15.0


def _run(code: str, queue: multiprocessing.Queue) -> None:
    from rlm_kernel.sandbox import Limits, SandboxSession, new_namespace, run_source
    from tests.sandbox.conftest import TEST_LIMITS

    session = SandboxSession(Limits(**TEST_LIMITS), seed=1)
    outcome = run_source(code, new_namespace(session), session)
    queue.put(outcome.error or "")


def _outcome(code: str) -> tuple[float, str | None]:
    queue: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=_run, args=(code, queue))
    start = time.monotonic()
    child.start()
    child.join(_WAIT)
    if child.is_alive():
        child.kill()
        child.join()
        return time.monotonic() - start, None
    return time.monotonic() - start, queue.get(timeout=5)


CASES = {
    "json_dumps": pytest.param("import json\nr = json.dumps(t)", id="json_dumps"),
    # the text of the cell's exception (runner.format_user_traceback, sandbox/error_text.py)
    "raise_value_error": pytest.param("raise ValueError(t)", id="raise_value_error"),
    "assert_message": pytest.param("assert False, t", id="assert_message"),
    "key_error": pytest.param("raise KeyError(t)", id="key_error"),
    "two_args": pytest.param("raise ValueError('x', t)", id="two_args"),
    "own_class": pytest.param("class E(Exception):\n    pass\nraise E(t)", id="own_class"),
    "own_str_super": pytest.param(
        "class E(Exception):\n    def __str__(self):\n        return super().__str__()\nraise E(t)",
        id="own_str_super",
    ),
    "os_error": pytest.param("raise OSError(t, t)", id="os_error"),
    "difflib_sequence_matcher": pytest.param(
        "import difflib\nr = difflib.SequenceMatcher(None, [t], [t]).ratio()",
        id="difflib_sequence_matcher",
        marks=pytest.mark.xfail(
            strict=True,
            reason="SequenceMatcher.__chain_b puts the items of b in a dict (b2j): C hashes the tuple, 2**40 "
            "visits, outside keys.py's hashing guards",
        ),
    ),
}


@pytest.mark.parametrize("code", list(CASES.values()))
def test_a_c_call_on_a_shared_nest_is_stopped(code: str) -> None:
    took, error = _outcome(_NEST + code)
    assert error is not None, f"still running after {_WAIT} s with a 1 s limit (killed)"
    assert error.split(":")[0] in LIMIT_ERRORS, error
    assert took < 10, took
