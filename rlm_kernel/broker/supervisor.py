"""The broker supervisor: forked by the launcher while it still holds the keys; forks a broker on request.

The kernel (which never holds a key) asks over its control socket for a broker
(`rlm_kernel.handover.request_broker`); the supervisor forks one and
hands the kernel its end of a fresh socketpair (SCM_RIGHTS) with the broker's pid. So a broker that died can
be replaced without the kernel ever seeing a key. The supervisor exits when the control socket closes (the
kernel is gone); a broker exits when its own socket closes. Both ignore SIGINT: an interrupt is the kernel's.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys

from rlm_kernel.handover import SPAWN_REQUEST

__all__ = ["spawn_supervisor_process", "start_supervisor"]


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


def _serve(control: socket.socket) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            request = control.recv(1)
        except InterruptedError:
            continue
        except OSError:
            return
        _reap()
        if request != SPAWN_REQUEST:
            return  # end of stream: the kernel is gone
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

                run_broker(ours)
            except BaseException:  # noqa: BLE001 - a broker must never return into the supervisor's loop
                code = 1
            finally:
                os._exit(code)
        ours.close()
        try:
            socket.send_fds(control, [str(pid).encode("ascii")], [theirs.fileno()])
        except OSError:
            return
        finally:
            theirs.close()


def _reap() -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def spawn_supervisor_process(environ: dict[str, str] | None = None) -> socket.socket:
    """Start the supervisor in a fresh interpreter (for benchmarks and tools outside the launcher: forking a
    process that already runs threads is unsafe); return the control socket. `environ` is its environment."""
    import subprocess

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    subprocess.Popen(  # noqa: S603 - our own module, by the running interpreter
        [sys.executable, "-m", "rlm_kernel.broker.supervisor", str(theirs.fileno())],
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
