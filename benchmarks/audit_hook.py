"""What the sandbox's audit hook (rlm_kernel/sandbox/audit.py) costs: `python -m benchmarks.audit_hook`.

Per audited event: `id()` fires `builtins.id`, which no rule watches; reading a frame's `f_code` fires
`object.__getattr__`, which the hook judges by its caller. Each is timed without the hook (a fresh process),
with the hook installed but no restricted code running, and inside `guarding()`. Per block: the same
restricted blocks through `run_source` with the guard on and replaced by a no-op, alternated, best of 7.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time

_EVENTS = r"""
import sys, time
def per_call(fn, n=200_000):
    best = float("inf")
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - t)
    return best / n * 1e9
frame = sys._getframe()
probes = {"id()": lambda: id(1), "frame.f_code": lambda: frame.f_code}
base = {k: per_call(f) for k, f in probes.items()}
from rlm_kernel.sandbox import audit
audit.install()
idle = {k: per_call(f) for k, f in probes.items()}
with audit.PROCESS_HOOK.guarding():
    guarded = {k: per_call(f) for k, f in probes.items()}
for k in probes:
    print(f"{k:14s} no hook {base[k]:6.0f} ns   hook idle +{idle[k] - base[k]:6.0f} ns   "
          f"guarded +{guarded[k] - base[k]:6.0f} ns")
"""

_BLOCKS = {
    "python loop": "t = 0\nfor i in range(300000):\n    t += i % 7\n",
    "namedtuple+TypeVar x300": (
        "import collections, typing\nfor i in range(300):\n"
        "    P = collections.namedtuple('P', 'a b')\n    T = typing.TypeVar('T')\n"
    ),
}


def _blocks() -> None:
    from rlm_kernel.sandbox import Limits, SandboxSession, audit, new_namespace, run_source

    class Unguarded(audit.AuditHook):
        """A hook that never guards: the same blocks without the audit hook's line."""

        def guarding(self) -> contextlib.AbstractContextManager[None]:  # type: ignore[override]
            return contextlib.nullcontext()

    limits = Limits(cpu_seconds=60, cpu_backstop_seconds=0, memory_mb=0)
    sessions = {
        "on": SandboxSession(limits, seed=1),
        "off": SandboxSession(limits, seed=1, audit=Unguarded()),
    }
    for name, code in _BLOCKS.items():
        namespaces = {mode: new_namespace(session) for mode, session in sessions.items()}
        times: dict[str, list[float]] = {"on": [], "off": []}
        for _ in range(7):
            for mode in ("off", "on"):
                start = time.perf_counter()
                outcome = run_source(code, namespaces[mode], sessions[mode])
                times[mode].append(time.perf_counter() - start)
                assert outcome.error is None, outcome.error
        on, off = min(times["on"]), min(times["off"])
        print(f"{name:26s} guarded {on * 1000:7.1f} ms   no guard {off * 1000:7.1f} ms   {on / off:.2f}x")


def main() -> None:
    print("per audited event (best of 7 x 200k calls):")
    print(subprocess.run([sys.executable, "-c", _EVENTS], capture_output=True, text=True, check=True).stdout)
    print("per restricted block (best of 7, alternated):")
    _blocks()


if __name__ == "__main__":
    main()
