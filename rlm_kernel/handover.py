"""The kernel's side of the broker supervisor: the launcher's hand-over, key references, asking for a broker.

The launcher (`python -m rlm_kernel`) forks the supervisor while it still holds the keys, then re-executes
itself as the kernel with the supervisor's control socket, the first broker's socket and the key *names* in
the environment (`take_handover`). The kernel holds `broker-key-ref:NAME` in place of each key and asks the
control socket for a new broker when one dies (`request_broker`; the other side is `broker.supervisor`).

It imports nothing of ours: the launcher uses it before it forks the supervisor, and importing the LLM layer
there (~0.15 s) would put that on every kernel start before the kernel itself starts.
"""

from __future__ import annotations

import os
import socket

__all__ = [
    "BROKER_ASKED_VAR",
    "BROKER_FD_VAR",
    "BROKER_PID_VAR",
    "CONTROL_FD_VAR",
    "KEY_NAMES_VAR",
    "KEY_REF_PREFIX",
    "REFUSED",
    "SPAWN_REQUEST",
    "ask_for_broker",
    "key_ref",
    "receive_broker",
    "request_broker",
    "Sockets",
    "take_handover",
]

CONTROL_FD_VAR = "RLM_BROKER_CONTROL_FD"
BROKER_FD_VAR = "RLM_BROKER_FD"
BROKER_PID_VAR = "RLM_BROKER_PID"
BROKER_ASKED_VAR = "RLM_BROKER_ASKED"
"""Set by the launcher when it asked for the first broker without waiting: its answer is read on first use."""
KEY_NAMES_VAR = "RLM_BROKER_KEY_NAMES"
KEY_REF_PREFIX = "broker-key-ref:"
SPAWN_REQUEST = b"s"
"""The one byte the kernel sends on the control socket for a new broker."""
REFUSED = b"r"
"""The supervisor's answer when too many brokers were asked for in a short time (no broker is started)."""


def key_ref(name: str) -> str:
    """What the kernel holds in place of the key in variable `name`: a reference, never the value."""
    return KEY_REF_PREFIX + name


Sockets = tuple[socket.socket, socket.socket | None, int | None]
"""(control socket, the first broker's socket or None, its pid or None)."""


def take_handover(environ: dict[str, str] | None = None) -> tuple[list[str], Sockets | None, bool]:
    """In the re-executed kernel: take the broker sockets and the key names the launcher left in the
    environment (removing them from it): (key names, sockets or None, whether the supervisor's answer to the
    launcher's request for the first broker is still unread on the control socket). The launcher makes the
    kernel's LLM session with a link over these sockets."""
    env = os.environ if environ is None else environ
    raw = env.pop(CONTROL_FD_VAR, None)
    raw_sock = env.pop(BROKER_FD_VAR, None)
    raw_pid = env.pop(BROKER_PID_VAR, None)
    pending = env.pop(BROKER_ASKED_VAR, None) == "1" and raw is not None and raw_sock is None
    names = [n for n in env.pop(KEY_NAMES_VAR, "").split(",") if n]
    if raw is None:
        return names, None, False
    control = socket.socket(fileno=int(raw))
    control.set_inheritable(False)
    sock = None
    if raw_sock is not None:
        sock = socket.socket(fileno=int(raw_sock))
        sock.set_inheritable(False)
    return names, (control, sock, int(raw_pid) if raw_pid else None), pending


def ask_for_broker(control: socket.socket) -> None:
    """Ask the supervisor for a new broker without waiting for it (`receive_broker` reads the answer).

    The launcher does this, so the supervisor forks the first broker while the kernel starts."""
    control.sendall(SPAWN_REQUEST)


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
    if data == REFUSED and not fds:
        raise OSError(
            "the broker supervisor refused to start another LLM broker: too many were asked for in a short "
            "time; try again in a few seconds"
        )
    if not fds or not data:
        for fd in fds:
            os.close(fd)
        raise OSError("the broker supervisor did not answer (it may have exited)")
    sock = socket.socket(fileno=fds[0])
    sock.set_inheritable(False)
    return sock, int(data.decode("ascii"))
