"""The broker supervisor: forked by the launcher while it still holds the keys; forks a broker on request.

The kernel (which never holds a key) asks over its control socket for a broker
(`rlm_kernel.handover.request_broker`); the supervisor forks one and hands the kernel its end of a fresh
socketpair (SCM_RIGHTS) with the broker's pid. So a broker that died can be replaced without the kernel ever
seeing a key. Everything the kernel sends is hostile: one broker lives at a time (`MAX_BROKERS`), forks are
rate-limited (`SPAWN_BURST`, `SPAWN_EVERY_S`; a request beyond is answered `REFUSED`), and a byte that is not
a request is dropped without forking. The supervisor exits when the control socket closes (the kernel is
gone); a broker exits when its own socket closes. Both ignore SIGINT: an interrupt is the kernel's.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import time

from rlm_kernel.broker.spend_store import SpendStore
from rlm_kernel.handover import REFUSED, SPAWN_REQUEST
from rlm_kernel.private_files import snapshot_replay_cache
from rlm_kernel.settings_file import config_path

__all__ = ["MAX_BROKERS", "SPAWN_BURST", "SPAWN_EVERY_S", "spawn_supervisor_process", "start_supervisor"]


def start_supervisor() -> socket.socket:
    """Fork the supervisor (it keeps this process's environment, keys included); return the kernel's end."""
    kernel_end, supervisor_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the supervisor
        try:
            kernel_end.close()
            _not_dumpable()  # inherited by every broker it forks: no core dumps, no same-user ptrace
            _serve(supervisor_end)
        finally:
            os._exit(0)
    supervisor_end.close()
    return kernel_end


def _not_dumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): the key-holding processes leave no core dump and refuse /proc/<pid>/mem and
    ptrace to processes of the same user without CAP_SYS_PTRACE (as root, Landlock and seccomp in the
    kernel are what stop it)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):  # not Linux: nothing to set
        pass


MAX_BROKERS = 1
"""Live brokers per kernel: the kernel asks for a new one only when its broker died, so a request while one
lives ends that one first (a kernel asking in a loop holds at most this many, not one per request)."""
SPAWN_BURST = 5
SPAWN_EVERY_S = 2.0
"""Rate limit on forks: a burst of `SPAWN_BURST`, then one per `SPAWN_EVERY_S` seconds; a request beyond it is
answered with `REFUSED` and forks nothing."""


class _Bucket:
    """A token bucket: `take()` is True while the rate allows one more fork."""

    def __init__(self, burst: int = SPAWN_BURST, every: float = SPAWN_EVERY_S) -> None:
        self.burst, self.every = burst, every
        self.tokens = float(burst)
        self.at = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(float(self.burst), self.tokens + (now - self.at) / self.every)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


def _serve(control: socket.socket) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    store = SpendStore.create()  # the session's spending: every broker forked below inherits it
    replay_copy = snapshot_replay_cache(_cache_settings())  # before the kernel runs any code (private_files)
    try:
        _serve_requests(control, store)
    finally:
        if replay_copy is not None:
            import shutil

            shutil.rmtree(replay_copy, ignore_errors=True)


def _cache_settings() -> dict[str, str]:
    """`RLM_CACHE` and `RLM_CACHE_DIR` as the start-time configuration sets them: the environment, else the
    settings file's `cache` and `cache_dir`."""
    env = dict(os.environ)
    try:
        import tomllib

        path = config_path(env)
        data = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        data = {}
    for key, name in (("cache", "RLM_CACHE"), ("cache_dir", "RLM_CACHE_DIR")):
        if not env.get(name, "").strip() and isinstance(data.get(key), str):
            env[name] = data[key]
    return env


def _serve_requests(control: socket.socket, store: SpendStore) -> None:
    live: list[int] = []  # brokers this supervisor forked that still run
    bucket = _Bucket()
    while True:
        try:
            request = control.recv(1)
        except InterruptedError:
            continue
        except OSError:
            return
        if not request:
            return  # end of stream: the kernel is gone
        _reap(live)
        if request != SPAWN_REQUEST:
            continue  # not a request we know: dropped, nothing forked
        if not bucket.take():
            if not _answer(control, REFUSED, None):
                return
            continue
        while len(live) >= MAX_BROKERS:
            _end(live.pop(0))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # a broker
            code = 0
            try:
                control.close()
                theirs.close()
                # import the LLM layer only once the kernel asks for something: a broker started with the
                # kernel must not compete with the kernel's own start-up for the CPU
                select.select([ours], [], [])
                from rlm_kernel.broker.server import run_broker

                run_broker(ours, store)
            except BaseException:  # noqa: BLE001 - a broker must never return into the supervisor's loop
                code = 1
            finally:
                os._exit(code)
        ours.close()
        live.append(pid)
        try:
            if not _answer(control, str(pid).encode("ascii"), theirs):
                return
        finally:
            theirs.close()


def _answer(control: socket.socket, data: bytes, sock: socket.socket | None) -> bool:
    """Send the kernel an answer (with the broker's socket); False when the kernel is gone."""
    try:
        socket.send_fds(control, [data], [sock.fileno()] if sock is not None else [])
    except OSError:
        return False
    return True


def _end(pid: int) -> None:
    """End a broker this supervisor forked (the kernel asked for another) and reap it."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _reap(live: list[int]) -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in live:
            live.remove(pid)


def spawn_supervisor_process(environ: dict[str, str] | None = None) -> socket.socket:
    """Start the supervisor in a fresh interpreter (for benchmarks and tools outside the launcher: forking a
    process that already runs threads is unsafe); return the control socket. `environ` is its environment."""
    import subprocess

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    subprocess.Popen(  # noqa: S603 - our own module, by the running interpreter
        [sys.executable, "-P", "-m", "rlm_kernel.broker.supervisor", str(theirs.fileno())],
        pass_fds=[theirs.fileno()],
        env=environ,
        start_new_session=True,
    )
    theirs.close()
    return ours


if __name__ == "__main__":  # `python -m rlm_kernel.broker.supervisor FD`: serve the control socket FD
    try:
        _serve(socket.socket(fileno=int(sys.argv[1])))
    finally:
        os._exit(0)
