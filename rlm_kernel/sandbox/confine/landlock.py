"""Landlock through ctypes: the three system calls, the access bits per ABI, and one `restrict` call.

Landlock (Linux ≥ 5.13) lets an unprivileged process give up file-system rights (from ABI 4 also TCP
bind/connect, from ABI 6 signals and abstract Unix sockets towards processes outside its domain) for itself
and every thread and process it starts afterwards.
A domain only ever narrows: a later ruleset cannot widen it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "FS_READ",
    "FS_WRITE_FILES",
    "FS_WRITE_TREE",
    "LandlockUnavailable",
    "Rules",
    "abi_version",
    "handled_fs",
    "restrict",
]

# Generic syscall numbers (the same on x86_64, aarch64, riscv64 ...: added after the tables were unified).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2
PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FS_READ = READ_FILE | READ_DIR
FS_WRITE_FILES = WRITE_FILE | MAKE_REG | TRUNCATE  # create and write regular files, nothing else
FS_WRITE_TREE = FS_WRITE_FILES | REMOVE_FILE | REMOVE_DIR | MAKE_DIR | REFER
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # rights that apply to a single file


class LandlockUnavailable(OSError):
    """This system cannot apply Landlock (old kernel, disabled LSM, filtered syscall, not Linux)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]  # fmt: skip


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc: ctypes.CDLL | None = None


def _syscall() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    global _libc
    if _libc is None:
        # the interpreter's own C library first: `find_library` runs helper programs (ldconfig), ~20 ms of
        # every confined start-up; it is only the fallback for a Python not linked against libc
        libc = ctypes.CDLL(None, use_errno=True)
        if not hasattr(libc, "syscall"):
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _libc = libc
    fn = _libc.syscall
    fn.restype = ctypes.c_long
    return fn


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockUnavailable(err, f"{what}: {os.strerror(err)}")
    return result


def abi_version() -> int:
    """The running kernel's Landlock ABI (1..), or raise LandlockUnavailable saying why not."""
    if os.environ.get("RLM_TEST_ONLY_NO_LANDLOCK") == "1":  # tests simulate a kernel without Landlock
        raise LandlockUnavailable(
            38, "landlock_create_ruleset: Function not implemented (simulated for tests)"
        )
    if not os.uname().sysname == "Linux":
        raise LandlockUnavailable(38, f"Landlock is a Linux feature; this is {os.uname().sysname}")
    try:
        fn = _syscall()
    except OSError as exc:
        raise LandlockUnavailable(38, f"no C library to make system calls with: {exc}") from None
    return _check(fn(ctypes.c_long(_SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                     ctypes.c_uint32(_CREATE_RULESET_VERSION)), "landlock_create_ruleset")  # fmt: skip


def handled_fs(abi: int) -> int:
    """Every file-system right the given ABI knows (all of them are denied unless a rule allows them)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


@dataclass
class Rules:
    """What stays allowed: paths with their rights, TCP ports, and whether TCP/scoping is handled at all."""

    paths: list[tuple[str, int]] = field(default_factory=list)
    restrict_tcp_bind: bool = True
    bind_ports: list[int] = field(default_factory=list)
    restrict_tcp_connect: bool = True
    connect_ports: list[int] = field(default_factory=list)
    scope: bool = True

    def allow(self, paths: Iterable[str], rights: int) -> None:
        self.paths.extend((p, rights) for p in paths)


@dataclass
class Applied:
    """What `restrict` enforced on this ABI (for the banner and `%rlm security`)."""

    abi: int
    tcp: bool
    scoped: bool
    skipped_paths: list[str]


def restrict(rules: Rules) -> Applied:
    """Enforce `rules` on this thread and everything it starts later; `no_new_privs` is set first."""
    abi = abi_version()
    fs = handled_fs(abi)
    net = 0
    if abi >= 4:
        net = (NET_BIND_TCP if rules.restrict_tcp_bind else 0) | (
            NET_CONNECT_TCP if rules.restrict_tcp_connect else 0
        )
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 and rules.scope else 0
    attr = _RulesetAttr(fs, net, scoped)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    fn = _syscall()
    ruleset = _check(fn(ctypes.c_long(_SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                        ctypes.c_uint32(0)), "landlock_create_ruleset")  # fmt: skip
    skipped: list[str] = []
    try:
        for path, rights in rules.paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                skipped.append(path)
                continue
            try:
                allowed = rights & fs
                if not os.path.isdir(path):
                    allowed &= _FILE_ONLY
                _add_rule(ruleset, _RULE_PATH_BENEATH, _PathBeneathAttr(allowed, fd), path)
            finally:
                os.close(fd)
        for access, ports in ((NET_BIND_TCP, rules.bind_ports), (NET_CONNECT_TCP, rules.connect_ports)):
            if not net & access:
                continue
            for port in sorted(set(ports)):
                _add_rule(ruleset, _RULE_NET_PORT, _NetPortAttr(access, port), f"port {port}")
        set_no_new_privs()
        _check(fn(ctypes.c_long(_SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)),
               "landlock_restrict_self")  # fmt: skip
    finally:
        os.close(ruleset)
    return Applied(abi=abi, tcp=bool(net), scoped=bool(scoped), skipped_paths=skipped)


def _add_rule(ruleset: int, rule_type: int, attr: ctypes.Structure, what: str) -> None:
    result = _syscall()(
        ctypes.c_long(_SYS_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(rule_type), ctypes.byref(attr),
        ctypes.c_uint32(0),
    )  # fmt: skip
    _check(result, f"landlock_add_rule({what})")


def set_no_new_privs() -> None:
    """prctl(PR_SET_NO_NEW_PRIVS, 1): no later execve can gain privileges; it can never be unset."""
    _syscall()  # loads the C library (find_library runs helper programs: do it before they are denied)
    assert _libc is not None
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise LandlockUnavailable(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
