"""Red team 7: single C calls on a tuple nested with sharing (`t = (t, t)` forty times: 80 objects, 2**40
visits) that the 1 s time limit cannot stop. Each payload runs in a child process (no CPU backstop
in-process), which must report a limit error within a few seconds; a hang is killed after `_WAIT` seconds.

Open (strict xfail): the text of an exception whose argument is such a tuple (`raise ValueError(t)`, `assert
False, t`: `str(exc)` is one C `tuple.__repr__`, run by the runner's traceback formatting). Fixed:
json.dumps / JSONEncoder (payloads.JSON_ATTACKS), difflib's `SequenceMatcher`, which hashed the items of its
sequences in C (`b2j`; library_keys.py hands them through keys.py's hashing guards).
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
    "raise_value_error": pytest.param(
        "raise ValueError(t)",
        id="raise_value_error",
        marks=pytest.mark.xfail(
            strict=True,
            reason="str(exc) of an exception holding a shared-nest tuple is one C tuple.__repr__ (2**40 "
            "visits), run by runner.format_user_traceback / IPython's traceback: the time limit cannot stop "
            "it",
        ),
    ),
    "assert_message": pytest.param(
        "assert False, t",
        id="assert_message",
        marks=pytest.mark.xfail(
            strict=True, reason="as raise_value_error: the AssertionError's text is a C repr of the tuple"
        ),
    ),
    "difflib_sequence_matcher": pytest.param(
        "import difflib\nr = difflib.SequenceMatcher(None, [t], [t]).ratio()", id="difflib_sequence_matcher"
    ),
}


@pytest.mark.parametrize("code", list(CASES.values()))
def test_a_c_call_on_a_shared_nest_is_stopped(code: str) -> None:
    took, error = _outcome(_NEST + code)
    assert error is not None, f"still running after {_WAIT} s with a 1 s limit (killed)"
    assert error.splitlines()[-1].split(":")[0] in LIMIT_ERRORS, error  # the last line names the error
    assert took < 10, took
