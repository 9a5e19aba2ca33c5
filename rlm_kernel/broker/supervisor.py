"""The broker supervisor: forked by the launcher while it still holds the keys; forks a broker on request.

The kernel (which never holds a key) asks over its control socket for a broker; the supervisor forks one and
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

__all__ = [
    "BROKER_ASKED_VAR",
    "BROKER_FD_VAR",
    "BROKER_PID_VAR",
    "CONTROL_FD_VAR",
    "KEY_NAMES_VAR",
    "KEY_REF_PREFIX",
    "handover",
    "key_ref",
    "take_handover",
    "ask_for_broker",
    "receive_broker",
    "request_broker",
    "spawn_supervisor_process",
    "start_supervisor",
]

CONTROL_FD_VAR = "RLM_BROKER_CONTROL_FD"
BROKER_FD_VAR = "RLM_BROKER_FD"
BROKER_PID_VAR = "RLM_BROKER_PID"
BROKER_ASKED_VAR = "RLM_BROKER_ASKED"
"""Set by the launcher when it asked for the first broker without waiting: its answer is read on first use."""
KEY_NAMES_VAR = "RLM_BROKER_KEY_NAMES"
KEY_REF_PREFIX = "broker-key-ref:"
_SPAWN = b"s"
handover: tuple[socket.socket, socket.socket | None, int | None] | None = None
"""In the kernel: (control socket, first broker's socket, its pid), taken from the environment at start."""
answer_pending = False
"""In the kernel: the supervisor's answer to the launcher's request for the first broker is still unread."""


def key_ref(name: str) -> str:
    """What the kernel holds in place of the key in variable `name`: a reference, never the value."""
    return KEY_REF_PREFIX + name


def take_handover(environ: dict[str, str] | None = None) -> list[str]:
    """In the re-executed kernel: take the broker sockets and the key names the launcher left in the
    environment (removing them from it); return the key names."""
    global handover, answer_pending
    env = os.environ if environ is None else environ
    raw = env.pop(CONTROL_FD_VAR, None)
    raw_sock = env.pop(BROKER_FD_VAR, None)
    raw_pid = env.pop(BROKER_PID_VAR, None)
    answer_pending = env.pop(BROKER_ASKED_VAR, None) == "1" and raw is not None and raw_sock is None
    names = [n for n in env.pop(KEY_NAMES_VAR, "").split(",") if n]
    if raw is None:
        return names
    control = socket.socket(fileno=int(raw))
    control.set_inheritable(False)
    sock = None
    if raw_sock is not None:
        sock = socket.socket(fileno=int(raw_sock))
        sock.set_inheritable(False)
    handover = (control, sock, int(raw_pid) if raw_pid else None)
    return names


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
        if request != _SPAWN:
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


def ask_for_broker(control: socket.socket) -> None:
    """Ask the supervisor for a new broker without waiting for it (`receive_broker` reads the answer).

    The launcher does this, so the supervisor forks the first broker while the kernel starts."""
    control.sendall(_SPAWN)


def request_broker(control: socket.socket, timeout: float = 10.0) -> tuple[socket.socket, int]:
    """Ask the supervisor for a new broker: (the kernel's socket to it, its pid)."""
    ask_for_broker(control)
    return receive_broker(control, timeout)


def receive_broker(control: socket.socket, timeout: float = 10.0) -> tuple[socket.socket, int]:
    """The supervisor's answer to a request for a broker: (the kernel's socket to it, its pid)."""
    control.settimeout(timeout)
    try:
        data, fds, _flags, _addr = socket.recv_fds(control, 64, 1)
    finally:
        control.settimeout(None)
    if not fds or not data:
        raise OSError("the broker supervisor did not answer (it may have exited)")
    sock = socket.socket(fileno=fds[0])
    sock.set_inheritable(False)
    return sock, int(data.decode("ascii"))


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
