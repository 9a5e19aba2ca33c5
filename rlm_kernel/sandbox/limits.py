"""Resource limits: `Limits` (read from `RLM_*` environment variables) and `cell_limits`, which applies them.

CPU and wall time per cell (timers, sticky cancellation), an RLIMIT_CPU backstop for C loops, RLIMIT_AS.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
import json
import os
import resource
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlm_kernel.sandbox.errors import CellTimeout, SandboxError
from rlm_kernel.sandbox.filenames import is_sandboxed_filename

if TYPE_CHECKING:
    from rlm_kernel.sandbox.session import SandboxSession

__all__ = [
    "Limits",
    "cell_limits",
    "consume_backstop_note",
    "check_source_size",
    "interruptible",
    "uninterruptible",
]

_TICK = 0.05  # seconds between repeated timeouts once a cell is cancelled (sticky cancellation)


def _env_number(env: Mapping[str, str], name: str, default: float, cast: type = int) -> Any:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = cast(float(raw)) if cast is int else cast(raw)
    except ValueError:
        raise ValueError(
            f"{name}={raw!r} is not a number; set it to a number (0 disables the limit)"
        ) from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} is negative; use 0 to disable the limit")
    return value


@dataclasses.dataclass(frozen=True)
class Limits:
    """Every sandbox limit; 0 disables a limit. Frozen: cells can never change them."""

    cpu_seconds: float = 60.0  # CPU time per cell (RLM_CPU_SECONDS)
    wall_seconds: float = 1800.0  # wall time per cell; long because LLM calls wait (RLM_WALL_SECONDS)
    cpu_backstop_seconds: float = (
        30.0  # extra CPU before the process is killed in a C loop (RLM_CPU_BACKSTOP_SECONDS)
    )
    memory_mb: int = 8192  # memory cells may allocate, above the kernel's start-up size (RLM_MEMORY_MB)
    output_bytes: int = 1_000_000  # printed output per cell (RLM_OUTPUT_BYTES)
    max_source_bytes: int = 500_000  # size of one cell's source (RLM_MAX_SOURCE_BYTES)
    max_ast_nodes: int = 200_000  # syntax-tree nodes in one cell (RLM_MAX_AST_NODES)
    max_range: int = 100_000_000  # len(range(...)) (RLM_MAX_RANGE)
    max_sequence: int = 200_000_000  # items produced by sequence repetition 'a' * n (RLM_MAX_SEQUENCE)
    # bits of an integer built by **, <<, *, pow(), int.from_bytes, math, Fraction (RLM_MAX_INT_BITS); low
    # enough that CPython's quadratic integer routines (division, gcd, Decimal(int)) finish in seconds
    max_int_bits: int = 2_000_000
    max_format_width: int = 100_000  # width/precision in format specs (RLM_MAX_FORMAT_WIDTH)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Limits:
        """Read `RLM_*` variables (see the README's Limits section); explicit keyword overrides win."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            var = "RLM_" + field.name.upper()
            cast = float if field.type in ("float", float) else int
            values[field.name] = _env_number(env, var, field.default, cast)
        values.update(overrides)
        return cls(**values)


def check_source_size(source: str, limits: Limits) -> None:
    """Raise `SandboxError` if a cell's source is larger than `limits.max_source_bytes`."""
    if limits.max_source_bytes and len(source) > limits.max_source_bytes:
        size = len(source.encode("utf-8", "surrogatepass"))
        if size > limits.max_source_bytes:
            raise SandboxError(
                f"the cell is {size} bytes, over the {limits.max_source_bytes}-byte source limit "
                "(RLM_MAX_SOURCE_BYTES); load large text with load_context() instead of pasting it"
            )


_MEMORY_BASELINE: list[int] = []  # address space the kernel had mapped when it first applied the cap


def _mapped_bytes() -> int:
    """The process's address-space size now (VmSize in /proc/self/status), 0 if unknown."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return 0


def _apply_memory_cap(limits: Limits) -> None:
    """RLIMIT_AS = what the kernel had mapped after start-up (measured once, at the first cell) + the limit,
    so RLM_MEMORY_MB counts what cells allocate, not the ~1 GB an idle kernel already maps."""
    if not limits.memory_mb:
        return
    if not _MEMORY_BASELINE:
        _MEMORY_BASELINE.append(_mapped_bytes())
    want = _MEMORY_BASELINE[0] + limits.memory_mb * 1024 * 1024
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if soft == resource.RLIM_INFINITY or soft > want:
            resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def _process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def consume_backstop_note(marker: Path | str) -> str | None:
    """If the previous kernel died inside a cell (CPU backstop), return a message saying so and forget it."""
    path = Path(marker)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    _forget(path)
    seconds = data.get("backstop_seconds")
    return (
        "The previous kernel stopped while running a cell, so the kernel was restarted; variables were "
        f"lost. Most likely the cell used more than {seconds} s of CPU inside a single C-level operation "
        "(for example sum(range(10**12))), which the sandbox cannot interrupt, or crashed the interpreter "
        "(for example hashing a tuple nested a million levels deep). Make the operation smaller."
    )


_MARKER_BYTES = 256


def _mark(path: Path, text: str) -> None:
    """Write the marker in place, padded to a fixed size: never truncated, so no blocks are freed per cell."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.pwrite(fd, text.encode("utf-8").ljust(_MARKER_BYTES), 0)
    finally:
        os.close(fd)


def _forget(path: Path) -> None:
    """Delete the marker; where the OS layer allows writing it but not deleting it, blank it in place."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError:
        with contextlib.suppress(OSError):
            _mark(path, "")


# Code objects of the limits' own set-up and teardown (filled in below, once the functions exist): a timer
# that fires while one of them runs only cancels (the next guard raises), since a CellTimeout raised part-way
# through would leave a session in `_HOLD` — its timers armed and RLIMIT_CPU lowered after the cell.
_MACHINERY: set[Any] = set()


def uninterruptible(*functions: Any) -> None:
    """Mark kernel functions whose own lines a firing timer must not break into: bookkeeping that runs with
    a cell's frames below it and must finish what it started (the limits' own set-up and teardown; a batch
    of cooperative sub-RLMs switching output captures and stopping its tasks). A timer firing in one of
    them only cancels the cell; the next guard, or the function's own check of `session.cancelled`, raises.
    Code they call in another greenlet (a task's blocks) is not covered: it has frames of its own."""
    _MACHINERY.update(fn.__code__ for fn in functions)


# Code objects of kernel functions that render a cell's values (the text of its exception): a timer firing in
# them raises as in the cell's own code (C's str() and repr() check for signals at each value they visit).
_RENDERING: set[Any] = set()


def interruptible(*functions: Any) -> None:
    """Mark kernel functions that only compute a cell's values into text (`str(exc)` of its exception, run
    after the cell's frames are gone): a firing timer raises CellTimeout in them as in the cell's code, so
    the limit stops a C repr of a tuple nested with sharing (2**40 visits). They must hold no state a
    CellTimeout part-way through would leave broken; their callers report the CellTimeout."""
    _RENDERING.update(fn.__code__ for fn in functions)


def _is_user_stack(frame: Any) -> bool:
    """True when sandboxed code (or a rendering of a cell's values) is on the stack and the limits' own
    set-up or teardown is not running."""
    depth = 0
    while frame is not None and depth < 200:
        code = frame.f_code
        if code in _MACHINERY:
            return False
        if code in _RENDERING or is_sandboxed_filename(code.co_filename):
            return True
        frame = frame.f_back
        depth += 1
    return False


class _SignalTimers:
    """CPU (ITIMER_PROF) and wall (ITIMER_REAL) timers for the main thread; they repeat once fired. A firing
    cancels every session in `sessions` (the live list of `_ProcessHold`)."""

    def __init__(self, sessions: list[SandboxSession], limits: Limits) -> None:
        self.sessions = sessions
        self.limits = limits
        self.saved: list[tuple[int, Any, tuple[float, float]]] = []
        self.started = 0.0

    def _handler(self, kind: str, seconds: float) -> Any:
        sessions = self.sessions
        message = (
            f"the cell ran past its {kind} time limit of {seconds:g} s "
            f"(RLM_{kind.upper()}_SECONDS); split the work into smaller cells"
        )

        def handle(signum: int, frame: Any) -> None:
            for session in sessions:
                if session.cancelled is None:
                    session.cancelled = message
            if _is_user_stack(frame):
                raise CellTimeout(message)

        return handle

    def start(self) -> None:
        plan = [
            (signal.SIGPROF, signal.ITIMER_PROF, self.limits.cpu_seconds, "cpu"),
            (signal.SIGALRM, signal.ITIMER_REAL, self.limits.wall_seconds, "wall"),
        ]
        for signum, which, seconds, kind in plan:
            if not seconds:
                continue
            old = signal.signal(signum, self._handler(kind, seconds))
            old_timer = signal.setitimer(which, seconds, _TICK)
            self.saved.append((signum, old, (which, *old_timer)))
        self.started = time.monotonic()

    def stop(self) -> None:
        elapsed = time.monotonic() - self.started
        for signum, old, (which, delay, interval) in reversed(self.saved):
            # Hand back a timer someone else had set (e.g. pytest-timeout), minus the time the cell took.
            if delay and which == signal.ITIMER_REAL:
                delay = max(delay - elapsed, 1e-3)
            signal.setitimer(which, delay, interval)
            signal.signal(signum, old if old is not None else signal.SIG_DFL)
        self.saved.clear()


class _ProcessHold:
    """The process-wide limits — the CPU backstop (RLIMIT_CPU), the memory cap, and on the main thread the
    signal timers — armed by the first `cell_limits` that needs them and given back when the last one
    ends, in whatever order they end.

    Order matters because the cooperative sub-RLMs of a batch (greenlets on the main thread) each enter their
    own session's limits and finish in any order, as do cells on other threads: saving and restoring per
    entry handed a finished run's timer back to the process (it then fired in later, unrelated code) and
    left RLIMIT_CPU lowered. A session entered on the main thread while the timers run rides on them: its
    time counts against the limits already running (those of the cell that started them, so a sub-RLM's
    blocks cannot reset the cell's CPU clock), and a firing timer cancels every session on them. Each entry
    may only move the backstop later (to its own CPU allowance from now), never earlier."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sessions: list[SandboxSession] = []
        self.on_main: list[SandboxSession] = []  # live: the timers' handlers read it
        self.timers: _SignalTimers | None = None
        self.saved_cpu: tuple[int, int] | None = None
        self.marker: Path | None = None

    def join(self, session: SandboxSession, on_main: bool) -> None:
        limits = session.limits
        with self.lock:
            first = not self.sessions
            self.sessions.append(session)
            _apply_memory_cap(limits)
            saved = _set_cpu_backstop(limits, only_later=not first)
            if self.saved_cpu is None:
                # the first to change RLIMIT_CPU keeps what to give back (the first session may have no
                # backstop, and a later one moves it: it was then left raised after the last one ended)
                self.saved_cpu = saved
            marker = session.backstop_marker
            if self.marker is None and marker is not None and saved is not None:
                self.marker = Path(marker)
                with contextlib.suppress(OSError):
                    _mark(
                        self.marker,
                        json.dumps({"backstop_seconds": limits.cpu_seconds + limits.cpu_backstop_seconds}),
                    )
            if on_main:
                self.on_main.append(session)
                if len(self.on_main) == 1:
                    self.timers = _SignalTimers(self.on_main, limits)
                    self.timers.start()

    def leave(self, session: SandboxSession, on_main: bool) -> None:
        with self.lock:
            # tolerant: a join cut short (a timer firing in user code below it) may not have added it
            if on_main and session in self.on_main:
                self.on_main.remove(session)
                if not self.on_main:
                    timers, self.timers = self.timers, None
                    if timers is not None:
                        timers.stop()
            if session in self.sessions:
                self.sessions.remove(session)
            if self.sessions:
                return
            saved_cpu, self.saved_cpu = self.saved_cpu, None
            if saved_cpu is not None:
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(resource.RLIMIT_CPU, saved_cpu)
            marker, self.marker = self.marker, None
            if marker is not None:
                _forget(marker)


_HOLD = _ProcessHold()


class _ThreadWatchdog:
    """For cells run outside the main thread: a watchdog thread that injects `CellTimeout` asynchronously."""

    def __init__(self, session: SandboxSession, limits: Limits) -> None:
        self.session = session
        self.limits = limits
        self.target = threading.get_ident()
        self.done = threading.Event()
        self.thread: threading.Thread | None = None

    def _run(self, cpu_start: float, wall_start: float, clock_id: int) -> None:
        limits = self.limits
        while not self.done.wait(_TICK):
            cpu = time.clock_gettime(clock_id) - cpu_start
            wall = time.monotonic() - wall_start
            if self.session.cancelled is None:
                if limits.cpu_seconds and cpu > limits.cpu_seconds:
                    kind, seconds = "cpu", limits.cpu_seconds
                elif limits.wall_seconds and wall > limits.wall_seconds:
                    kind, seconds = "wall", limits.wall_seconds
                else:
                    continue
                self.session.cancelled = (
                    f"the cell ran past its {kind} time limit of {seconds:g} s "
                    f"(RLM_{kind.upper()}_SECONDS); split the work into smaller cells"
                )
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(self.target), ctypes.py_object(CellTimeout)
            )

    def start(self) -> None:
        clock_id = time.pthread_getcpuclockid(threading.get_ident())
        args = (time.clock_gettime(clock_id), time.monotonic(), clock_id)
        self.thread = threading.Thread(target=self._run, args=args, name="rlm-cell-watchdog", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join()
        # Clear an exception injected after the cell finished but before the watchdog stopped.
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.target), None)


_LIFT_LOCK = threading.RLock()
_lift_depth = [0]


@contextlib.contextmanager
def _memory_uncounted() -> Iterator[None]:
    """Lift the memory cap (RLIMIT_AS's soft limit, up to the hard one) for kernel work inside a cell, then
    put it back raised by what the process mapped meanwhile: that becomes part of the kernel's start-up
    size (the baseline), so a library loaded on first use is never charged to the cell that first used it.
    Nested and concurrent uses share one lift (the outermost measures). Another thread's allocations during
    the lift would be credited as well: a lift lasts one library import, once per process."""
    with _LIFT_LOCK:  # one lift at a time, process-wide; the collector stays off while it lasts (`uncounted`)
        _lift_depth[0] += 1
        collecting = gc.isenabled()
        gc.disable()
        try:
            saved = None
            if _lift_depth[0] == 1 and _MEMORY_BASELINE:
                with contextlib.suppress(ValueError, OSError):
                    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
                    if soft != resource.RLIM_INFINITY:
                        saved = (soft, hard, _mapped_bytes())
                        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
            try:
                yield
            finally:
                if saved is not None:
                    soft, hard, before = saved
                    grown = max(0, _mapped_bytes() - before)
                    _MEMORY_BASELINE[0] += grown
                    want = soft + grown if hard == resource.RLIM_INFINITY else min(soft + grown, hard)
                    with contextlib.suppress(ValueError, OSError):
                        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
        finally:
            _lift_depth[0] -= 1
            if collecting:
                gc.enable()


@contextlib.contextmanager
def uncounted() -> Iterator[None]:
    """Kernel work done inside a cell that must not count against (or be cut by) the cell's limits —
    loading a library on its first import: the memory it maps is added to the kernel's baseline (see
    `_memory_uncounted`); on the main thread the CPU and wall timers are paused, and the CPU backstop
    (RLIMIT_CPU's soft limit) moves on by the CPU the work used.

    No cell code may run meanwhile: the cyclic collector is off for the whole lift, so a cell object's
    finalizer (`__del__`, a generator's `finally`, a weakref callback) cannot be run by a collection the
    import triggers — it would run with the cap lifted and the timers paused, and what it allocated would
    join the baseline. Such objects are collected after the lift, under the cell's limits."""
    with _memory_uncounted():
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        with _time_uncounted():
            yield


@contextlib.contextmanager
def _time_uncounted() -> Iterator[None]:
    saved = [(which, signal.setitimer(which, 0)) for which in (signal.ITIMER_PROF, signal.ITIMER_REAL)]
    started = _process_cpu()
    try:
        yield
    finally:
        for which, (delay, interval) in saved:
            if delay or interval:
                signal.setitimer(which, delay or interval, interval)
        used = int(_process_cpu() - started) + 1
        with contextlib.suppress(ValueError, OSError):
            soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
            if soft != resource.RLIM_INFINITY:
                want = soft + used if hard == resource.RLIM_INFINITY else min(soft + used, hard)
                resource.setrlimit(resource.RLIMIT_CPU, (want, hard))


def _set_cpu_backstop(limits: Limits, only_later: bool = False) -> tuple[int, int] | None:
    """Lower RLIMIT_CPU's soft limit to the CPU used so far + the cell's allowance + the backstop margin;
    returns the limit it replaced (None if no backstop applies). `only_later`: never lower it, only raise."""
    if not limits.cpu_seconds or not limits.cpu_backstop_seconds:
        return None
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        want = int(_process_cpu() + limits.cpu_seconds + limits.cpu_backstop_seconds) + 1
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if only_later and (soft == resource.RLIM_INFINITY or want <= soft):
            return None
        resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
        return soft, hard
    except (ValueError, OSError):
        return None


@contextlib.contextmanager
def cell_limits(session: SandboxSession) -> Iterator[None]:
    """Apply the session's limits around one cell (or one root-loop block); nested uses are pass-through.

    Resets the per-cell output count and cancellation, arms CPU/wall timers (sticky: once fired they re-fire
    every 50 ms while user code runs, and every guard and `except` handler re-raises), lowers RLIMIT_CPU's
    soft limit as a backstop for C loops (the process dies; the kernel manager restarts it), caps memory.
    The code inside runs under the audit hook's guard (`session.audit.guarding()`).
    """
    if session.active_depth and session.owner_thread != threading.get_ident():
        # Another thread runs restricted code while a cell is active (e.g. a sub-RLM worker): it gets its
        # own watchdog so that its loops stop too; output accounting stays with the cell.
        watchdog = _ThreadWatchdog(session, session.limits)
        was_in_cell, session.cell_thread.in_cell = session.cell_thread.in_cell, True
        watchdog.start()
        try:
            with session.audit.guarding():
                yield
        finally:
            watchdog.stop()
            session.cell_thread.in_cell = was_in_cell
        return
    if session.active_depth:
        session.active_depth += 1
        try:
            with session.audit.guarding():
                yield
        finally:
            session.active_depth -= 1
        return
    session.begin_cell()
    on_main = threading.current_thread() is threading.main_thread()
    watchdog = None if on_main else _ThreadWatchdog(session, session.limits)
    session.active_depth = 1
    session.owner_thread = threading.get_ident()
    session.cell_thread.in_cell = True
    try:
        _HOLD.join(session, on_main)
        if watchdog is not None:
            watchdog.start()
        with session.audit.guarding():
            yield
    finally:
        if watchdog is not None:
            watchdog.stop()
        session.cell_thread.in_cell = False
        session.active_depth = 0
        _HOLD.leave(session, on_main)
        session.end_cell()


uninterruptible(
    cell_limits.__wrapped__,  # type: ignore[attr-defined]
    _ProcessHold.join,
    _ProcessHold.leave,
    _SignalTimers.start,
    _SignalTimers.stop,
    _ThreadWatchdog.start,
    _ThreadWatchdog.stop,
)
