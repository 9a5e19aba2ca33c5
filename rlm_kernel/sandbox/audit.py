"""The CPython audit hook: a second line of defence inside the kernel process while cell or model code runs.

`install()` adds one `sys.addaudithook` hook (hooks cannot be removed); `guarding()` marks the current
thread as running restricted code (`cell_limits` enters it around every cell, user expression and root-loop
block). While a thread is marked, the hook refuses, on that thread only (the LLM layer's event loop and other
threads are never touched):

- `exec` of code that did not come through the policy (its filename is not a registered sandboxed one), and
  `compile` of such code — except the standard library's own code generators (`collections.namedtuple`,
  dataclasses' generated methods, `typing.ForwardRef`'s compile-only check, `ast.parse`) and code run while
  an allowed module is imported; `typing.get_type_hints` evaluating a string lands here;
- `import` of modules that lead out of the sandbox (`os`, `subprocess`, `socket`, `ctypes`, `pickle`, ...);
- `open` of any file (files reach cells through `load_context`, kernel code that checks the context roots;
  reading Python's own library sources for tracebacks stays possible);
- processes, signals, sockets, `ctypes`, file-system changes, environment changes, tracing, frame and `gc`
  introspection, and building code or function objects by hand (and thread starts, on Pythons that audit
  them: 3.13+).

Kernel code may still do these things for a cell (`load_context` opens files under the roots, the root
loop saves its trajectory): the hook walks the stack outwards from the event, and the first frame that belongs
either to restricted code (a sandboxed filename) or to the kernel's own modules decides. Library frames in
between do not count. Frame and attribute events (`sys._getframe`, `f_code`, `tb_frame`, ...) are judged by
the frame that asked directly, because the standard library uses them on a cell's behalf (`typing`, `enum`).

Cost: one Python call per audited event in the process, returning at once when no restricted code runs.

About 430 lines because the rule tables (denied modules, kernel-only events) and the rules that read them are
one decision procedure; they are kept beside the hook they configure.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import dataclasses
import os
import pathlib
import sys
import sysconfig
import threading
import timeit
import typing
from collections.abc import Callable, Iterator
from typing import Any

from rlm_kernel.sandbox.confine import policy_disabled
from rlm_kernel.sandbox.errors import SandboxError
from rlm_kernel.sandbox.filenames import is_sandboxed_filename

__all__ = ["PROCESS_HOOK", "AuditHook", "AuditRefusal", "FileAccessRefused", "ImportRefused", "install"]


class AuditRefusal(SandboxError):
    """An operation refused by the kernel's audit hook while restricted code ran."""


class FileAccessRefused(AuditRefusal, PermissionError):
    """A file operation refused by the audit hook; a PermissionError, so `except OSError:` still works."""


class ImportRefused(AuditRefusal, ImportError):
    """An import refused by the audit hook; an ImportError, so `except ImportError:` still works."""


for _cls in (AuditRefusal, FileAccessRefused, ImportRefused):
    _cls.__name__ = _cls.__qualname__ = "SandboxError"  # one name for users and tools to recognise

_CELL, _KERNEL, _LIBRARY = "cell", "kernel", "library"

_get_ident = threading.get_ident

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SANDBOX_DIR = os.path.join(_PACKAGE_DIR, "sandbox") + os.sep
# Kernel modules that act for a cell (they call its objects and library code with its arguments): their frames
# are transparent, like library frames, so the cell's frame further out decides.
_PROXY_FILES = frozenset(
    os.path.join(_SANDBOX_DIR, name)
    for name in (
        "facade.py",
        "facades.py",
        "imports.py",
        "safe_stdlib.py",
        "safe_decimal.py",
        "safe_types.py",
        "guards.py",
        "handout.py",
        "writes.py",
        "builtins.py",
        "caps.py",
        "ordering.py",  # sorted/min/max in steps: it calls the cell's key and comparisons
        "compare.py",  # comparisons and searches in steps: it calls the cell's __eq__/__lt__
        "setops.py",  # set algebra in steps: it calls the cell's __eq__/__hash__ (through keys.py)
        "keys.py",  # hash-table lookups in steps: it calls the cell's __eq__/__hash__ (through compare.py)
        "bulk.py",  # sets and dicts built in chunks: it calls the cell's __hash__/__eq__ and iterators
        "stepped_stdlib.py",  # operator/bisect/heapq/groupby in steps: it calls the cell's comparisons
        "library_compare.py",  # the library's Python comparison methods in steps: the cell's __eq__/__lt__
        "library_keys.py",  # the library's Python keyed methods in steps: the cell's __eq__/__hash__
        # the data facades act for the cell too; data/loader.py (loading the libraries) is kernel code
        os.path.join("data", "__init__.py"),
        os.path.join("data", "attrs.py"),
        os.path.join("data", "modules.py"),
        os.path.join("data", "plotting.py"),
        os.path.join("data", "standins.py"),
        os.path.join("data", "figures.py"),
    )
)

# Library functions that compile or exec text they generate themselves from checked names.
_GENERATOR_CODES = frozenset(
    {
        collections.namedtuple.__code__,
        dataclasses._create_fn.__code__,  # type: ignore[attr-defined]
        typing.ForwardRef.__init__.__code__,  # compile only; evaluation (ForwardRef._evaluate) is refused
        ast.parse.__code__,  # an AST, not code
    }
)
_TIMER_INIT = timeit.Timer.__init__.__code__  # %timeit: IPython builds Timer('pass') and swaps in its body
_IMPORT_SYSTEM = "<frozen importlib._bootstrap"  # _bootstrap and _bootstrap_external

# Modules whose import (when not imported yet) a cell must never cause.
_DENIED_MODULES = frozenset(
    (
        "os posix nt posixpath subprocess _posixsubprocess socket _socket ssl _ssl select selectors "
        "ctypes _ctypes cffi pty tty termios fcntl resource signal mmap multiprocessing _multiprocessing "
        "concurrent threading _thread asyncio _asyncio shutil tempfile glob pathlib _io pickle _pickle "
        "marshal shelve dbm code codeop pdb bdb runpy importlib zipimport pkgutil imp builtins sys gc "
        "inspect traceback linecache tracemalloc faulthandler sysconfig site webbrowser http urllib "
        "ftplib smtplib poplib imaplib nntplib telnetlib xmlrpc socketserver platform getpass pwd grp "
        "spwd crypt _winapi msvcrt winreg ipykernel IPython jupyter_client zmq rlm_kernel httpx "
        "httpcore aiohttp requests anyio tornado"
    ).split()
)

# Events refused unless the kernel's own code asked for them.
_KERNEL_ONLY_EVENTS = frozenset(
    (
        "os.system os.exec os.posix_spawn os.spawn os.fork os.forkpty os.kill os.killpg os.startfile "
        "subprocess.Popen pty.spawn signal.pthread_kill resource.setrlimit resource.prlimit "
        "os.remove os.rename os.rmdir os.mkdir os.chmod os.chown os.link os.symlink os.truncate os.utime "
        "os.chdir os.chflags os.lchflags os.putenv os.unsetenv os.setxattr os.removexattr os.listdir "
        "os.scandir os.listxattr os.getxattr glob.glob glob.glob/2 mmap.__new__ "
        "sys.addaudithook sys.settrace sys.setprofile sys._current_frames sys._current_exceptions "
        "sys.setrecursionlimit code.__new__ function.__new__ gc.get_objects gc.get_referrers "
        "gc.get_referents pickle.find_class builtins.input "
        "webbrowser.open urllib.Request cpython.run_command cpython.run_file cpython.run_module "
        "cpython.run_startup cpython.run_interactivehook cpython.PyInterpreterState_New "
        "cpython._PySys_ClearAuditHooks _thread.start_new_thread tempfile.mkstemp tempfile.mkdtemp "
        "ensurepip.bootstrap pdb.Pdb"
    ).split()
)
_KERNEL_ONLY_PREFIXES = ("socket.", "ctypes.", "shutil.", "http.client.", "ftplib.", "smtplib.", "poplib.")
_KERNEL_ONLY_PREFIXES += ("imaplib.", "nntplib.", "telnetlib.", "sqlite3.", "winreg.", "_winapi.", "fcntl.")
_KERNEL_ONLY_PREFIXES += ("syslog.", "msvcrt.")

# Events judged by the frame that asked directly.
_DIRECT_EVENTS = frozenset({"sys._getframe", "object.__getattr__"})
# Setting or deleting attributes of classes fires these too (`A.count = 0` in a cell is fine): only dunders.
_SETATTR_EVENTS = frozenset({"object.__setattr__", "object.__delattr__"})

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _library_source_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {
        os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths
    }
    return tuple(d + os.sep for d in sorted(dirs))


_LIBRARY_SOURCES = _library_source_dirs()


def _matplotlib_data_dir() -> str:
    """matplotlib's own data directory (fonts, styles), found without importing matplotlib; '' if absent."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("matplotlib")
    except (ImportError, ValueError):
        return ""
    if spec is None or not spec.submodule_search_locations:
        return ""
    return os.path.join(os.path.realpath(list(spec.submodule_search_locations)[0]), "mpl-data") + os.sep


def _timezone_dirs() -> tuple[str, ...]:
    """The time-zone database: the system's (zoneinfo.TZPATH) and the `tzdata` package's."""
    import importlib.util
    import zoneinfo

    dirs = [os.path.realpath(p) + os.sep for p in zoneinfo.TZPATH if os.path.isabs(p)]
    try:
        spec = importlib.util.find_spec("tzdata")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        dirs.append(
            os.path.join(os.path.realpath(list(spec.submodule_search_locations)[0]), "zoneinfo") + os.sep
        )
    return tuple(dirs)


# Read-only data files libraries open for a cell while they work (fonts for drawing text, time zones).
_LIBRARY_DATA = tuple(d for d in (_matplotlib_data_dir(), *_timezone_dirs()) if d)


# -- the hook -------------------------------------------------------------------------------------------
class AuditHook:
    """The audit hook and what it consults: which threads run restricted code now (`guarding()`, nestable).

    The kernel process has one, `PROCESS_HOOK`, shared by every `SandboxSession` (as `session.audit`; the
    session's `cell_limits` enters its `guarding()`): CPython cannot remove a hook, so it is installed once,
    on first use, and stays. Tests may build their own to exercise the rules.
    """

    def __init__(self) -> None:
        self.active: dict[int, int] = {}  # thread id -> nesting depth of guarding()
        self.busy: set[int] = set()  # threads inside the hook (the hook's own frame reads fire events too)
        # Event name -> rule; events no rule watches are added as None the first time they are seen.
        self.rules: dict[str, Rule | None] = dict(_RULES)
        self._installed = False
        self._lock = threading.Lock()

    def install(self) -> None:
        """Add this hook to the process once (it stays for the life of the process)."""
        with self._lock:
            if not self._installed:
                sys.addaudithook(_make_hook(self.active, self.busy, self.rules))
                self._installed = True

    @contextlib.contextmanager
    def guarding(self) -> Iterator[None]:
        """Mark the current thread as running restricted code for the duration (nestable).

        Under the test-only switch RLM_UNSAFE_DISABLE_POLICY=1 (cells are plain Python, to prove the OS
        layer alone) it does nothing: no in-process line is drawn."""
        if policy_disabled():
            yield
            return
        self.install()
        active = self.active
        tid = _get_ident()
        active[tid] = active.get(tid, 0) + 1
        try:
            yield
        finally:
            depth = active.get(tid, 1) - 1
            if depth > 0:
                active[tid] = depth
            else:
                active.pop(tid, None)

    def is_guarding(self) -> bool:
        """True while the current thread runs restricted code (inside `guarding()`)."""
        return _get_ident() in self.active


def install() -> None:
    """Add the process's hook (`PROCESS_HOOK`) to this process once; the kernel does it at start."""
    PROCESS_HOOK.install()


def _make_hook(
    active: dict[int, int], busy: set[int], rules: dict[str, Rule | None]
) -> Callable[[str, tuple[Any, ...]], None]:
    """The function `sys.addaudithook` gets: it closes over the hook's state (no attribute look-ups)."""

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if not active:  # the common case: no restricted code runs anywhere
            return
        rule = rules.get(event, _UNSEEN)
        if rule is None:
            return
        if rule is _UNSEEN:  # first time this event name is seen while restricted code runs: classify it once
            rule = rules[event] = _kernel_only if event.startswith(_KERNEL_ONLY_PREFIXES) else None
            if rule is None:
                return
        tid = _get_ident()
        if tid not in active or tid in busy:
            return
        if rule is _exec or rule is _compile:  # checked code (every cell, every block) needs no stack walk
            named = (
                getattr(args[0], "co_filename", None) if rule is _exec else args[1] if len(args) > 1 else None
            )
            if type(named) is str and is_sandboxed_filename(named):
                return
        busy.add(tid)
        try:
            refused = rule(event, args, sys._getframe(1))
        finally:
            busy.discard(tid)
        if refused is not None:
            kind, reason = refused
            raise kind(f"{reason} (refused by the kernel's audit hook: {event})")

    return hook


# -- deciding who asked ----------------------------------------------------------------------------------
def _who(frame: Any) -> str:
    filename = frame.f_code.co_filename
    if is_sandboxed_filename(filename):
        return _CELL
    if filename.startswith(_PACKAGE_DIR) and filename not in _PROXY_FILES:
        return _KERNEL
    return _LIBRARY


def _decisive(frame: Any, *, imports_decide: bool = False) -> str:
    """The first frame outwards that is restricted code or kernel code decides; none at all: restricted.

    `imports_decide`: a frame of the import system decides too, as kernel code — what a module does while it
    is being imported (its own imports, code generated at import time as attrs does) was judged when its
    import was allowed.
    """
    while frame is not None:
        who = _who(frame)
        if who is not _LIBRARY:
            return who
        if imports_decide and frame.f_code.co_filename.startswith(_IMPORT_SYSTEM):
            return _KERNEL
        frame = frame.f_back
    return _CELL


Refusal = tuple[type[AuditRefusal], str] | None
Rule = Callable[[str, tuple[Any, ...], Any], Refusal]


def _kernel_only(event: str, args: tuple[Any, ...], frame: Any) -> Refusal:
    if _decisive(frame) is _KERNEL:
        return None
    return (
        AuditRefusal,
        "restricted code cannot start processes, open sockets, load native code or inspect the interpreter",
    )


def _direct(event: str, args: tuple[Any, ...], frame: Any) -> Refusal:
    if frame is not None and _who(frame) is _CELL:
        return AuditRefusal, "restricted code cannot reach frames or code objects"
    return None


def _set_dunder(event: str, args: tuple[Any, ...], frame: Any) -> Refusal:
    name = args[1] if len(args) > 1 else None
    if type(name) is str and name.startswith("__") and frame is not None and _who(frame) is _CELL:
        return AuditRefusal, f"restricted code cannot change {name!r}"
    return None


def _marshal(event: str, args: tuple[Any, ...], frame: Any) -> Refusal:
    if frame is not None and frame.f_code.co_filename.startswith(_IMPORT_SYSTEM):
        return None  # the import system reading a module's cached bytecode
    return _kernel_only(event, args, frame)


def _code_origin_ok(frame: Any) -> bool:
    if frame is None:
        return False
    code = frame.f_code
    if code is _TIMER_INIT:  # only the empty Timer %timeit builds; a Timer of a string is a code runner
        local = frame.f_locals
        return all(type(local.get(k)) is str and local.get(k) == "pass" for k in ("stmt", "setup"))
    return code in _GENERATOR_CODES or code.co_filename.startswith(_IMPORT_SYSTEM)


def _exec(event: str, args: tuple[Any, ...], frame: Any) -> Refusal:
    code = args[0] if args else None
    filename = getattr(code, "co_filename", None)
    if type(filename) is str and is_sandboxed_filename(filename):
        return None
    if _code_origin_ok(frame) or _decisive(frame, imports_decide=True) is _KERNEL:
        return None  # a library generator, a module being imported, or kernel code working for the cell
    return AuditRefusal, "running code that did not pass the sandbox policy is not allowed"


def _compile(event: str, args: tuple[Any, ...], frame: Any) -> Refusal:
    filename = args[1] if len(args) > 1 else None
    if type(filename) is str and is_sandboxed_filename(filename):
        return None
    if _code_origin_ok(frame) or _decisive(frame, imports_decide=True) is _KERNEL:
        return None
    return AuditRefusal, "compiling code outside the sandbox policy is not allowed"


def _import(event: str, args: tuple[Any, ...], frame: Any) -> Refusal:
    name = args[0] if args else None
    if type(name) is not str:
        return ImportRefused, "import of a module without a name"
    if name not in _DENIED_MODULES and name.partition(".")[0] not in _DENIED_MODULES:
        return None
    if _decisive(frame, imports_decide=True) is _KERNEL:
        return None
    return ImportRefused, f"module {name!r} is not available to restricted code"


def _open(event: str, args: tuple[Any, ...], frame: Any) -> Refusal:
    """Files reach restricted code only through kernel helpers (`load_context`, with its own checks); an open
    that restricted code or a library acting for it causes directly may only read Python's own sources."""
    if _decisive(frame) is _KERNEL:
        return None
    path, mode, flags = (tuple(args) + (None, None, None))[:3]
    writes = (type(mode) is str and any(c in mode for c in "wax+")) or (
        type(flags) is int and flags & _WRITE_FLAGS
    )
    if writes:
        return FileAccessRefused, "restricted code cannot write files"
    if isinstance(path, pathlib.PurePath) and type(path).__module__ == "pathlib":
        path = str(path)  # never calls a restricted object's __fspath__ from inside the hook
    if type(path) in (str, bytes):
        if frame is not None and frame.f_code.co_filename.startswith(_IMPORT_SYSTEM):
            return None  # the import system reading a module's source (imports are checked by name)
        real = os.path.realpath(os.fsdecode(path))
        if real.endswith(".py") and real.startswith(_LIBRARY_SOURCES):
            return None  # tracebacks and warnings quote library source lines
        if real.startswith(_LIBRARY_DATA):
            return None  # matplotlib's fonts, the time-zone database: read-only library data
    return FileAccessRefused, "restricted code cannot open files; read them with load_context()"


_UNSEEN: Any = object()
# Event name -> rule (each AuditHook starts from a copy and adds the events it classifies on first sight).
_RULES: dict[str, Rule | None] = {
    **dict.fromkeys(_KERNEL_ONLY_EVENTS, _kernel_only),
    **dict.fromkeys(_DIRECT_EVENTS, _direct),
    **dict.fromkeys(_SETATTR_EVENTS, _set_dunder),
    "exec": _exec,
    "compile": _compile,
    "import": _import,
    "marshal.loads": _marshal,
    "marshal.load": _marshal,
    "marshal.dumps": _marshal,
    "open": _open,
}

# The kernel process's hook: one, because installed hooks cannot be removed (see AuditHook).
PROCESS_HOOK = AuditHook()
