"""seccomp filters through libseccomp (`pyseccomp`, a ctypes binding): which system calls the kernel gives up.

Two filters, both "allow by default, EPERM for the listed calls" so Python raises PermissionError:
`install_process_filter` (before any thread exists) denies new programs and processes, debugging other
processes, namespaces, mounts, kernel keyrings, BPF and io_uring; `install_socket_filter` (after the kernel's
own sockets exist, synchronised onto every thread with TSYNC) denies creating new sockets.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import socket
import sys
from collections.abc import Callable, Iterable

__all__ = [
    "PROCESS_CALLS",
    "SeccompUnavailable",
    "install_process_filter",
    "install_socket_filter",
    "load_library",
]

CLONE_THREAD = 0x00010000
# Calls that start programs or processes, reach into other processes, or change what the process can see.
SPAWN_CALLS = ("execve", "execveat", "fork", "vfork")
PROCESS_CALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
    "mount", "umount2", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
    "mount_setattr", "pivot_root", "chroot", "unshare", "setns",
    "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_by_handle_at", "name_to_handle_at",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "iopl", "ioperm", "swapon", "swapoff", "reboot", "acct", "quotactl",
)  # fmt: skip
AF_MAX = 46
SOCK_RAW = 3
SOCK_PACKET = 10
SOCK_TYPE_MASK = 0xF  # the type without SOCK_NONBLOCK / SOCK_CLOEXEC


class SeccompUnavailable(OSError):
    """This system cannot install seccomp filters (no libseccomp, not Linux, seccomp disabled or filtered)."""


# The shared-object names pyseccomp asks `ctypes.util.find_library` for, as the dynamic loader knows them on
# Linux: tried first, so the import does not run `ldconfig -p` twice (~10 ms each, a tenth of confinement's
# cost at start-up). Other names, and systems where these do not load, go to `find_library` as before.
_SONAMES = {"c": ("libc.so.6",), "seccomp": ("libseccomp.so.2",)}


def _find_library(real: Callable[[str], str | None]) -> Callable[[str], str | None]:
    def find(name: str) -> str | None:
        for soname in _SONAMES.get(name, ()):
            try:
                ctypes.CDLL(soname)
            except OSError:
                continue
            return soname
        return real(name)

    return find


def load_library():  # noqa: ANN201 - the pyseccomp module
    """Import pyseccomp (it loads libseccomp by ctypes); do this before any filter denies starting programs,
    as `ctypes.util.find_library` (the fallback when the usual names do not load) runs helper programs."""
    if os.environ.get("RLM_TEST_ONLY_NO_SECCOMP") == "1":  # tests simulate a system without seccomp
        raise SeccompUnavailable(errno.ENOSYS, "seccomp is not available (simulated for tests)")
    if "pyseccomp" in sys.modules:
        return sys.modules["pyseccomp"]
    real = ctypes.util.find_library
    ctypes.util.find_library = _find_library(real)
    try:
        import pyseccomp
    except ImportError as exc:
        raise SeccompUnavailable(errno.ENOSYS, f"pyseccomp is not installed ({exc})") from None
    except (OSError, AttributeError, TypeError) as exc:  # no libseccomp.so on this system
        raise SeccompUnavailable(errno.ENOSYS, f"libseccomp could not be loaded ({exc})") from None
    finally:
        ctypes.util.find_library = real
    return pyseccomp


def _add(flt, action: int, names: Iterable[str], *args) -> list[str]:  # noqa: ANN001
    """Add a rule per call name; names this architecture or libseccomp does not know are skipped."""
    missing: list[str] = []
    for name in names:
        try:
            flt.add_rule(action, name, *args)
        except (OSError, ValueError, RuntimeError):
            missing.append(name)
    return missing


def install_process_filter(*, programs: bool) -> list[str]:
    """Deny PROCESS_CALLS; unless `programs`, also execve/execveat, fork/vfork and clone without CLONE_THREAD
    (clone3 answers ENOSYS so the C library falls back to clone, whose flags seccomp can see).

    Returns the names of calls that could not be filtered here (unknown to this architecture)."""
    sc = load_library()
    try:
        flt = sc.SyscallFilter(sc.ALLOW)
        deny = sc.ERRNO(errno.EPERM)
        skipped = _add(flt, deny, PROCESS_CALLS)
        if not programs:
            skipped += _add(flt, deny, SPAWN_CALLS)
            skipped += _add(flt, deny, ["clone"], sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
            skipped += _add(flt, sc.ERRNO(errno.ENOSYS), ["clone3"])
        flt.load()
    except OSError as exc:
        raise SeccompUnavailable(exc.errno or errno.EINVAL, f"seccomp filter not installed: {exc}") from None
    return skipped


def install_socket_filter(*, allowed_families: Iterable[int]) -> None:
    """Deny socket() for every address family not in `allowed_families`, on every thread (TSYNC).

    socketpair() stays allowed: an unnamed pair reaches nothing outside the process (asyncio loops use one).
    """
    sc = load_library()
    allowed = set(allowed_families)
    try:
        flt = sc.SyscallFilter(sc.ALLOW)
        flt.set_attr(sc.Attr.CTL_TSYNC, 1)
        deny = sc.ERRNO(errno.EPERM)
        if not allowed:
            flt.add_rule(deny, "socket")
        else:
            for family in range(AF_MAX + 1):
                if family not in allowed:
                    flt.add_rule(deny, "socket", sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, family))
            for kind in (SOCK_RAW, SOCK_PACKET):  # raw sockets (root has CAP_NET_RAW): only stream/datagram
                flt.add_rule(deny, "socket", sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, kind))
        flt.load()
    except OSError as exc:
        raise SeccompUnavailable(
            exc.errno or errno.EINVAL, f"seccomp socket filter not installed: {exc}"
        ) from None


NETWORK_FAMILIES = (socket.AF_INET, socket.AF_INET6)
