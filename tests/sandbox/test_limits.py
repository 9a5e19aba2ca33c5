"""Limits: settings from the environment, sticky time limits, output cap, and (in subprocesses) the memory cap
and the RLIMIT_CPU backstop for C loops, which must not outlive a test in the pytest process."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from rlm_kernel.sandbox import (
    CellTimeout,
    Limits,
    SandboxSession,
    cell_limits,
    consume_backstop_note,
    new_namespace,
    run_source,
)
from rlm_kernel.sandbox.filenames import register_sandboxed_filename
from tests.sandbox.conftest import TEST_LIMITS


def test_limits_from_env() -> None:
    limits = Limits.from_env({"RLM_CPU_SECONDS": "2.5", "RLM_MEMORY_MB": "512", "RLM_OUTPUT_BYTES": "0"})
    assert limits.cpu_seconds == 2.5 and limits.memory_mb == 512 and limits.output_bytes == 0
    assert limits.wall_seconds == Limits().wall_seconds
    assert Limits.from_env({}, max_range=10).max_range == 10


@pytest.mark.parametrize("value", ["lots", "-1"])
def test_limits_from_env_rejects_bad_values(value: str) -> None:
    with pytest.raises(ValueError, match="RLM_CPU_SECONDS"):
        Limits.from_env({"RLM_CPU_SECONDS": value})


def test_limits_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Limits().cpu_seconds = 0  # type: ignore[misc]


def test_timeout_message_and_session_reuse(session: SandboxSession) -> None:
    namespace = new_namespace(session)
    outcome = run_source("x = 1\nwhile True:\n    x += 1", namespace, session)
    assert outcome.error is not None
    assert outcome.error.startswith(
        "CellTimeout: the cell ran past its cpu time limit of 1 s (RLM_CPU_SECONDS)"
    )
    assert namespace["x"] > 1
    assert (
        run_source("x = 0\nfor i in range(1000):\n    x += i\nx", namespace, session).value_repr == "499500"
    )


def test_wall_time_limit() -> None:
    session = SandboxSession(Limits(**{**TEST_LIMITS, "cpu_seconds": 0, "wall_seconds": 0.5}))
    namespace = new_namespace(session)
    # Waiting on a lock uses no CPU; only the wall-clock limit can end it.
    namespace["wait"] = threading.Event().wait
    outcome = run_source("wait()", namespace, session)
    assert outcome.error is not None and "wall time limit of 0.5 s" in outcome.error


def test_timers_and_handlers_are_restored(session: SandboxSession) -> None:
    before = (signal.getsignal(signal.SIGPROF), signal.getsignal(signal.SIGALRM))
    real_before = signal.getitimer(signal.ITIMER_REAL)  # pytest-timeout may have one running
    with cell_limits(session):
        assert signal.getitimer(signal.ITIMER_PROF)[0] > 0
        assert signal.getitimer(signal.ITIMER_REAL)[0] <= TEST_LIMITS["wall_seconds"]
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    real_after = signal.getitimer(signal.ITIMER_REAL)
    assert real_after[0] <= real_before[0] and (real_after[0] > 0) == (real_before[0] > 0)
    assert (signal.getsignal(signal.SIGPROF), signal.getsignal(signal.SIGALRM)) == before
    assert session.cancelled is None and session.active_depth == 0


def test_sessions_ending_out_of_order_give_every_limit_back() -> None:
    """Cooperative sub-RLMs (greenlets on the main thread) enter their own sessions' limits and end in any
    order: the timers, their handlers and RLIMIT_CPU come back as they were only when the last one ends (a
    per-entry save/restore left the first run's timer armed and the backstop lowered)."""
    from greenlet import greenlet

    before = (
        signal.getitimer(signal.ITIMER_PROF),
        signal.getsignal(signal.SIGPROF),
        signal.getsignal(signal.SIGALRM),
        resource.getrlimit(resource.RLIMIT_CPU),
    )
    first, second = SandboxSession(Limits(**TEST_LIMITS)), SandboxSession(Limits(**TEST_LIMITS))
    hub = greenlet.getcurrent()

    def run(session: SandboxSession) -> None:
        with cell_limits(session):
            hub.switch()  # waits for a model, as a sub-RLM's block does

    a, b = greenlet(run), greenlet(run)
    a.switch(first)  # a enters first ...
    b.switch(second)  # ... b enters while a is inside
    a.switch()  # a ends first
    assert signal.getitimer(signal.ITIMER_PROF)[0] > 0  # b still runs under the timers
    assert first.active_depth == 0 and second.active_depth == 1
    b.switch()
    assert a.dead and b.dead
    after = (
        signal.getitimer(signal.ITIMER_PROF),
        signal.getsignal(signal.SIGPROF),
        signal.getsignal(signal.SIGALRM),
        resource.getrlimit(resource.RLIMIT_CPU),
    )
    assert after == before


def test_a_session_entered_inside_a_cell_rides_on_its_clock(session: SandboxSession) -> None:
    """A sub-RLM's session entered inside a cell runs on the cell's CPU clock, not a fresh allowance of its
    own (each of its blocks would otherwise restart it), and a firing timer cancels both sessions."""
    inner = SandboxSession(Limits(**{**TEST_LIMITS, "cpu_seconds": 20}))
    with cell_limits(session):
        outcome = run_source("while True:\n    pass", new_namespace(inner), inner)
        assert outcome.error is not None and "cpu time limit of 1 s" in outcome.error, outcome.error
        assert session.cancelled is not None and "cpu time limit of 1 s" in session.cancelled
        again = run_source("while True:\n    pass", new_namespace(session), session)
        assert again.error is not None and "cpu time limit" in again.error  # the cell's clock has run out


class _FiringSession(SandboxSession):
    """A session whose comparison (made by the hold's `session in ...` tests) delivers the cell's timer
    signal: the handler then runs part-way through the hold's join or leave."""

    fire = False

    def __eq__(self, other: object) -> bool:
        if self.fire:
            signal.raise_signal(signal.SIGPROF)
        return self is other

    __hash__ = SandboxSession.__hash__


def test_a_timer_firing_inside_the_limits_teardown_leaves_nothing_armed() -> None:
    """A cancelled cell's timer re-fires every 50 ms; one that lands while a sub-RLM's session leaves the
    process hold (called from the sub-RLM's blocks, so sandboxed code is on the stack) raised CellTimeout
    there, left that session in the hold and so the timers armed and RLIMIT_CPU lowered after the cell."""
    before = (signal.getitimer(signal.ITIMER_PROF), signal.getsignal(signal.SIGPROF))
    outer = SandboxSession(Limits(**TEST_LIMITS))
    inner = _FiringSession(Limits(**TEST_LIMITS))
    # the sub-RLM's code calls into kernel code that enters its session's limits: a sandboxed frame below
    code = compile(
        "def enter(limits, inner):\n    with limits(inner):\n        inner.fire = True\n",
        "<rlm turn 1>",
        "exec",
    )
    register_sandboxed_filename("<rlm turn 1>")
    space: dict = {}
    exec(code, space)  # noqa: S102 - a frame with a sandboxed file name, no restricted code
    with cell_limits(outer):
        outer.cancelled = "the cell ran past its cpu time limit"
        try:
            space["enter"](cell_limits, inner)
        except CellTimeout:
            pass  # the timer may raise once the teardown is over; what matters is what it left behind
    assert (signal.getitimer(signal.ITIMER_PROF), signal.getsignal(signal.SIGPROF)) == before
    assert inner.active_depth == 0 and outer.active_depth == 0


def test_a_backstop_moved_by_a_later_session_is_given_back() -> None:
    """The first session has no backstop, a session entered inside it moves RLIMIT_CPU later: the limit the
    process had comes back when the last ends (only the first session's change was remembered)."""
    saved = resource.getrlimit(resource.RLIMIT_CPU)
    used = resource.getrusage(resource.RUSAGE_SELF)
    low = int(used.ru_utime + used.ru_stime) + 20
    first = SandboxSession(Limits(**TEST_LIMITS))  # cpu_backstop_seconds=0
    later = SandboxSession(Limits(**{**TEST_LIMITS, "cpu_seconds": 30, "cpu_backstop_seconds": 30}))
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (low, saved[1]))
        with cell_limits(first):
            with cell_limits(later):
                assert resource.getrlimit(resource.RLIMIT_CPU)[0] > low
        assert resource.getrlimit(resource.RLIMIT_CPU) == (low, saved[1])
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, saved)


def test_nested_cell_limits_pass_through(session: SandboxSession) -> None:
    with cell_limits(session):
        with cell_limits(session):
            assert session.active_depth == 2
        assert session.active_depth == 1
        assert signal.getitimer(signal.ITIMER_PROF)[0] > 0


def test_timeout_in_a_worker_thread(session: SandboxSession) -> None:
    results = []

    def work() -> None:
        results.append(run_source("while True:\n    pass", new_namespace(session), session))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    assert results[0].error is not None and results[0].error.startswith("CellTimeout"), results


def test_worker_thread_during_a_cell_gets_its_own_watchdog(session: SandboxSession) -> None:
    results = []

    def work() -> None:
        results.append(run_source("while True:\n    pass", new_namespace(session), session))

    with cell_limits(session):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join(30)
        assert not thread.is_alive()
    assert results[0].error is not None and results[0].error.startswith("CellTimeout"), results


def test_cancellation_is_sticky_in_guards(session: SandboxSession) -> None:
    namespace = new_namespace(session)
    with pytest.raises(CellTimeout):
        with cell_limits(session):
            session.cancelled = "test"
            namespace["_getiter_"]([1])
    assert session.cancelled is None


def test_output_cap_note(session: SandboxSession) -> None:
    outcome = run_source("for i in range(3000):\n    print('z' * 99)", new_namespace(session), session)
    assert outcome.error is None
    kept, _, note = outcome.stdout.rpartition("\n[output truncated: ")
    assert len(kept.encode()) <= 100_000
    assert note.startswith("200000 bytes over the 100000-byte limit per cell (RLM_OUTPUT_BYTES)]")
    # The cap is per cell.
    assert run_source("print('fresh')", new_namespace(session), session).stdout == "fresh\n"


def _run_isolated(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=timeout
    )


def test_memory_cap_in_subprocess() -> None:
    result = _run_isolated(
        """
        from rlm_kernel.sandbox import Limits, SandboxSession, new_namespace, run_source
        s = SandboxSession(Limits(memory_mb=1024, cpu_seconds=30))
        ns = new_namespace(s)
        print(run_source("x = []\\nwhile True:\\n    x.append('a' * 10**7)", ns, s).error)
        print(run_source("del x\\nprint('alive')", ns, s).stdout)
        """
    )
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.splitlines()[:2] == ["Traceback (most recent call last):", "  line 3"]
        or "MemoryError" in result.stdout
    ), result.stdout
    assert "MemoryError" in result.stdout and "alive" in result.stdout, result.stdout


def test_cpu_backstop_kills_c_loop_in_subprocess(tmp_path) -> None:
    marker = tmp_path / "backstop.json"
    result = _run_isolated(
        f"""
        from rlm_kernel.sandbox import Limits, SandboxSession, new_namespace, run_source
        s = SandboxSession(Limits(cpu_seconds=1, cpu_backstop_seconds=1, max_range=0, memory_mb=0),
                           backstop_marker={str(marker)!r})
        import functools
        ns = new_namespace(s)
        ns["spin"] = functools.partial(sum, range(10**12))  # one C call of minutes (no Python frame in it)
        run_source("spin()", ns, s)
        print("not reached")
        """
    )
    assert result.returncode == -signal.SIGXCPU, (result.returncode, result.stdout, result.stderr)
    assert "not reached" not in result.stdout
    note = consume_backstop_note(marker)
    assert note is not None and "C-level operation" in note and "restarted" in note
    assert consume_backstop_note(marker) is None and not marker.exists()


def test_cpu_rlimit_restored_after_cell(session: SandboxSession) -> None:
    before = resource.getrlimit(resource.RLIMIT_CPU)
    backstop = SandboxSession(Limits(**{**TEST_LIMITS, "cpu_backstop_seconds": 30}))
    with cell_limits(backstop):
        soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
        assert soft != resource.RLIM_INFINITY
    assert resource.getrlimit(resource.RLIMIT_CPU) == before


def test_display_bundles_share_the_output_cap(session: SandboxSession) -> None:
    session.begin_cell()
    small = {"text/plain": "ok", "text/html": "<b>ok</b>"}
    assert session.cap_mimebundle(small) is small
    big = {"text/plain": "p" * 150_000, "text/html": "<i>" + "h" * 200_000 + "</i>"}
    capped = session.cap_mimebundle(big)
    assert list(capped) == ["text/plain"]
    text = capped["text/plain"]
    assert text.startswith("p" * 1000) and len(text) < 100_200
    assert text.endswith("bytes over the 100000-byte limit per cell (RLM_OUTPUT_BYTES)]")
    assert session.cap_mimebundle({"text/plain": "more"})["text/plain"].startswith(
        "[output truncated: 4 bytes"
    )
    session.begin_cell()
    assert session.cap_mimebundle({"text/plain": "fresh"}) == {"text/plain": "fresh"}
