"""OS confinement of the kernel process: which layers hold (Landlock, seccomp), what they allow, and why not.

`confine_process` runs in the launcher before any thread exists (Landlock and the process filter then bind
every thread ipykernel starts later); `confine_sockets` runs once ipykernel has made its own sockets and
denies new ones on every thread. The `Status` they return and extend is what the banner and `%rlm security`
report: the launcher hands it to the kernel's `SandboxSession` (`session.confinement`).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from rlm_kernel.sandbox.confine import landlock, seccomp

__all__ = [
    "REQUIRE_ENV",
    "UNSAFE_POLICY_ENV",
    "ConfinementRequired",
    "Layer",
    "Status",
    "KernelPaths",
    "confine_process",
    "confine_sockets",
    "launch_code",
    "policy_disabled",
    "root_rules",
]

REQUIRE_ENV = "RLM_REQUIRE_CONFINEMENT"
UNSAFE_POLICY_ENV = "RLM_UNSAFE_DISABLE_POLICY"
DISABLE_ENV = (
    "RLM_CONFINEMENT"  # "off": the notebook's author turns the OS layer off (reported, never silent)
)

# Read-only places CPython, its C libraries, TLS and name resolution need (those that exist are allowed).
SYSTEM_READ = (
    "/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/usr/local/lib", "/usr/share/zoneinfo",
    "/usr/share/ca-certificates", "/usr/share/locale", "/usr/lib/locale", "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
    "/etc/gai.conf", "/etc/host.conf", "/etc/services", "/etc/protocols", "/etc/mime.types",
    "/sys/devices/system/cpu",
)  # fmt: skip
DEVICES_RW = ("/dev/null", "/dev/zero", "/dev/full")
DEVICES_READ = ("/dev/urandom", "/dev/random")


class ConfinementRequired(RuntimeError):
    """RLM_REQUIRE_CONFINEMENT=1 and a layer could not be applied: the kernel refuses to start."""


@dataclass
class Layer:
    """One protection layer: whether it holds, and what it does or why it does not."""

    name: str
    active: bool
    detail: str


@dataclass
class Status:
    """Everything the banner and `%rlm security` say about the OS layer of this kernel process."""

    layers: list[Layer] = field(default_factory=list)
    read_roots: list[str] = field(default_factory=list)
    write_roots: list[str] = field(default_factory=list)
    network: bool = True
    programs: bool = False
    policy_disabled: bool = False

    def summary(self) -> str:
        """Lines for the banner."""
        lines = []
        if self.policy_disabled:
            lines.append(
                f"UNSAFE: {UNSAFE_POLICY_ENV}=1 — cells run as PLAIN PYTHON WITHOUT THE SANDBOX POLICY "
                "(for testing the OS layer only)."
            )
        for layer in self.layers:
            lines.append(
                f"OS layer {layer.name}: {'active' if layer.active else 'NOT active'} — {layer.detail}"
            )
        return "\n".join(lines)


def policy_disabled() -> bool:
    """True when the start-time test switch RLM_UNSAFE_DISABLE_POLICY=1 was set (read once, at start)."""
    return _policy_disabled


_policy_disabled = os.environ.get(UNSAFE_POLICY_ENV) == "1"


def _connection_ports(connection_file: str | None) -> list[int] | None:
    if not connection_file:
        return None
    try:
        info = json.loads(Path(connection_file).read_text())
    except (OSError, ValueError):
        return None
    ports = [info.get(k) for k in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")]
    if info.get("transport", "tcp") != "tcp" or not all(isinstance(p, int) and p > 0 for p in ports):
        return None
    return [int(p) for p in ports]


def _python_roots() -> list[str]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.add(os.path.dirname(os.path.realpath(sys.executable)))
    scheme = sysconfig.get_paths()  # once: each call expands the whole install scheme again
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        roots.add(scheme.get(key, ""))
    roots.update(p for p in sys.path if p and os.path.isdir(p))
    roots.add(str(Path(__file__).resolve().parents[3]))  # the rlm_kernel package's parent (editable installs)
    return sorted(r for r in roots if r)


def launch_code() -> list[str]:
    """Where a process outside the confinement reads code or commands that run with the person's full trust:
    the Jupyter data folders (kernelspecs — the server runs their `argv`, this kernel's included), the
    Jupyter config folders (the server's own `jupyter_*_config.py`) and the user site-packages (the launcher
    and the broker import its `.pth` files and `usercustomize`). Inside a context root they stay readable,
    never writable (`root_rules`), whether they exist yet or not."""
    out: list[str] = []
    try:
        from jupyter_core.paths import jupyter_config_path, jupyter_path

        out += jupyter_path() + jupyter_config_path()
    except Exception:  # noqa: BLE001 - no jupyter_core: nothing of Jupyter's to protect
        pass
    import site

    if site.ENABLE_USER_SITE:
        out.append(site.getusersitepackages())
    return out


def _config_files() -> list[str]:
    """The configuration files ipykernel reads at start (IPython profile, Jupyter config dirs) and the
    profile's startup folder — not the folders themselves (history, runtime files, other kernels' keys)."""
    dirs: list[str] = []
    try:
        from IPython.core.profiledir import ProfileDir
        from IPython.paths import get_ipython_dir

        # made now, as IPython would at start, because the confined kernel may not create it
        dirs.append(ProfileDir.create_profile_dir_by_name(get_ipython_dir(), "default").location)
    except Exception:  # noqa: BLE001 - no profile yet: nothing to read
        pass
    try:
        from jupyter_core.paths import jupyter_config_path

        dirs += jupyter_config_path()
    except Exception:  # noqa: BLE001
        pass
    files = [
        os.path.join(d, f"{name}.{ext}")
        for d in dirs
        for name in ("ipython_config", "ipython_kernel_config")
        for ext in ("py", "json")
    ]
    return [f for f in files if os.path.isfile(f)] + [os.path.join(d, "startup") for d in dirs[:1]]


def _backstop_marker(connection_file: str | None) -> list[str]:
    """The file the CPU backstop writes beside the connection file: created now so a rule can name it."""
    if not connection_file:
        return []
    marker = connection_file + ".rlm-backstop"
    _remove_stale_markers(Path(connection_file).parent)
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
    except OSError:
        return []
    return [marker]


def _private_tmp() -> str | None:
    """A temporary directory for this kernel only (`<tmp>/rlm-kernel-<uid>/<pid>`), made TMPDIR.

    The confined kernel may not delete the directory itself, so leftovers of kernels that are gone are
    removed here (only when empty: anything a kernel left inside stays for its owner to see)."""
    import tempfile

    try:
        parent = Path(tempfile.gettempdir()) / f"rlm-kernel-{os.getuid()}"
        parent.mkdir(mode=0o700, exist_ok=True)
        for old in parent.iterdir():
            if old.name.isdigit() and not Path(f"/proc/{old.name}").exists():
                try:
                    old.rmdir()
                except OSError:
                    pass
        mine = parent / str(os.getpid())
        mine.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    os.environ["TMPDIR"] = str(mine)
    tempfile.tempdir = str(mine)
    return str(mine)


def _remove_stale_markers(folder: Path) -> None:
    """Blank markers left by confined kernels whose connection file is gone (they cannot delete their own)."""
    try:
        for marker in folder.glob("*.rlm-backstop"):
            if not marker.with_suffix("").exists() and not marker.read_bytes()[:4096].strip():
                marker.unlink()
    except OSError:
        pass


def _apply_landlock(
    connection_file: str | None, network: bool, programs: bool, st: Status, paths: KernelPaths
) -> Layer:
    rules = landlock.Rules()
    execute = landlock.EXECUTE if programs else 0
    python = _python_roots()
    rules.allow(python + list(SYSTEM_READ), landlock.FS_READ | execute)
    rules.allow(_config_files(), landlock.FS_READ)
    rules.allow(DEVICES_READ, landlock.READ_FILE)
    rules.allow(DEVICES_RW, landlock.READ_FILE | landlock.WRITE_FILE | landlock.TRUNCATE)
    pid_dir = f"/proc/{os.getpid()}"
    rules.allow([pid_dir], landlock.FS_READ)
    roots = list(paths.context_roots)
    # result.save/to_jsonl write into roots — but never where an unconfined process of ours reads code or
    # keeps its files (`root_rules`)
    granted, kept = root_rules(roots, python + launch_code(), list(paths.private))
    for path, rights in granted:
        rules.allow([path], rights)
    write: list[str] = []
    if connection_file:
        rules.allow([connection_file], landlock.READ_FILE)
    write += _backstop_marker(connection_file)
    rules.allow(list(paths.llm_read), landlock.READ_FILE)  # the settings file: read for %rlm show/set
    write += paths.llm_write
    tmp = _private_tmp()
    if tmp:
        write.append(tmp)
    rules.allow(write, landlock.FS_READ | landlock.FS_WRITE_TREE)
    ports = _connection_ports(connection_file)
    rules.restrict_tcp_bind = ports is not None and not programs
    rules.bind_ports = ports or []
    rules.restrict_tcp_connect = not network
    applied = landlock.restrict(rules)
    if applied.tcp and rules.restrict_tcp_bind:
        # ipykernel's pipe for subprocess output binds a random port; with no subprocesses it is not needed
        warnings.filterwarnings("ignore", message="Couldn't bind IOPub Pipe", category=UserWarning)
    st.read_roots = sorted(set(roots))
    st.write_roots = sorted(
        set(write)
        | {f"{r} (new and existing files, no deletion)" for r in roots if r not in kept}
        | {f"{r} (new and existing files, no deletion; not: {', '.join(kept[r])})" for r in kept}
    )
    parts = [
        f"ABI {applied.abi}; files: only the Python installation, the context roots, the kernel's own files"
    ]
    if applied.tcp:
        parts.append("TCP: bind only on the connection-file ports" + ("" if network else ", no connect"))
    elif applied.abi < 4:
        parts.append("TCP: not restricted (needs Landlock ABI 4)")
    if applied.scoped:
        parts.append("signals and abstract Unix sockets scoped to the kernel")
    else:
        parts.append("signals/abstract sockets: not scoped (needs ABI 6)")
    return Layer("Landlock", True, "; ".join(parts))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def root_rules(
    roots: list[str],
    code: list[str],
    private: list[str] = (),  # type: ignore[assignment]
) -> tuple[list[tuple[str, int]], dict[str, list[str]]]:
    """Landlock rules (path, rights) for the context roots: read them and write files in them (result.save),
    except where a process outside the confinement reads what is there. `code`: where the launcher, broker
    or kernel import from (a venv or an editable checkout inside the notebook's directory) — readable, never
    writable; `private`: the broker's files (response cache, cache key, settings file with a key) — neither
    readable nor writable. Landlock only adds rights, so a root holding such a place is granted piece by
    piece around it; a root that is itself on the import path gets no write at all. Also returns root → the
    places protected inside it (for `%rlm security`)."""
    real_code = sorted({os.path.realpath(c) for c in code if c})
    real_private = sorted({os.path.realpath(p) for p in private if p})
    rw = landlock.FS_READ | landlock.FS_WRITE_FILES
    rules: list[tuple[str, int]] = []
    kept: dict[str, list[str]] = {}

    def around(folder: str, code_in: list[str], private_in: list[str]) -> None:
        # the folder itself: list it; read its files only when nothing private lies below
        rules.append((folder, landlock.READ_DIR | (0 if private_in else landlock.READ_FILE)))
        if folder in code_in or folder in private_in:
            return
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            path = entry.path
            if entry.is_symlink():
                # a rule is made through the link, so it would grant its target (anywhere, a private place
                # included); a root's single rule never reaches through a link either
                continue
            c = [x for x in code_in if _inside(x, path)]
            p = [x for x in private_in if _inside(x, path)]
            if not c and not p:
                rules.append((path, rw))
            elif entry.is_dir(follow_symlinks=False):
                around(path, c, p)

    for root in roots:
        real = os.path.realpath(root)
        code_in = [c for c in real_code if _inside(c, real)]
        private_in = [p for p in real_private if _inside(p, real)]
        if not code_in and not private_in:
            rules.append((root, rw))
            continue
        kept[root] = code_in + private_in
        around(real, code_in, private_in)
    return rules, kept


@dataclass(frozen=True)
class KernelPaths:
    """The kernel's own paths Landlock must leave open, computed by the launcher (it knows the layers above).

    context_roots: read, and written by result.save/to_jsonl; llm_read: the LLM settings file; llm_write: the
    response cache directory (when the kernel makes its own model calls); private: the broker's files
    (response cache, cache key, a settings file holding a key) — carved out of the roots (`root_rules`).
    """

    context_roots: tuple[str, ...] = ()
    llm_read: tuple[str, ...] = ()
    llm_write: tuple[str, ...] = ()
    private: tuple[str, ...] = ()


def confine_process(
    connection_file: str | None, *, network: bool, programs: bool = False, paths: KernelPaths | None = None
) -> Status:
    """Apply Landlock and the seccomp process filter to this (still single-threaded) process.

    network: the kernel still makes its own model calls (TCP connect allowed, network sockets allowed).
    programs: the kernel may start programs (only for the in-kernel local-model server).
    paths: the context roots and LLM files to leave open (none given: only the working directory is a root).
    Raises ConfinementRequired if RLM_REQUIRE_CONFINEMENT=1 and a layer could not be applied.
    """
    st = Status(network=network, programs=programs, policy_disabled=_policy_disabled)
    if threading.active_count() > 1:
        st.layers.append(
            Layer("Landlock", False, "threads were already running; confinement must come first")
        )
    elif os.environ.get(DISABLE_ENV, "").lower() == "off":
        st.layers += [
            Layer("Landlock", False, f"turned off by {DISABLE_ENV}=off"),
            Layer("seccomp", False, f"turned off by {DISABLE_ENV}=off"),
        ]
    else:
        try:
            sc_module_error = None
            try:
                seccomp.load_library()  # before any rule denies the helper programs find_library runs
            except seccomp.SeccompUnavailable as exc:
                sc_module_error = exc
            try:
                if paths is None:
                    paths = KernelPaths(context_roots=(os.getcwd(),))
                st.layers.append(_apply_landlock(connection_file, network, programs, st, paths))
            except landlock.LandlockUnavailable as exc:
                st.layers.append(Layer("Landlock", False, f"unavailable: {exc.strerror or exc}"))
            if sc_module_error is not None:
                raise sc_module_error
            landlock.set_no_new_privs()
            skipped = seccomp.install_process_filter(programs=programs)
            detail = (
                "no new programs or processes (threads only), no ptrace/process_vm, namespaces, mounts, "
                "keyrings, BPF, perf, userfaultfd, io_uring"
                if not programs
                else "no ptrace/process_vm, namespaces, mounts, keyrings, BPF, perf, userfaultfd, io_uring; "
                "programs ALLOWED (the in-kernel local-model server needs them)"
            )
            if skipped:
                detail += f" (not on this architecture: {', '.join(skipped)})"
            st.layers.append(Layer("seccomp", True, detail))
        except (seccomp.SeccompUnavailable, landlock.LandlockUnavailable) as exc:
            st.layers.append(Layer("seccomp", False, f"unavailable: {exc.strerror or exc}"))
    _require(st)
    return st


def confine_sockets(st: Status) -> None:
    """After ipykernel made its sockets: deny new sockets on every thread (network families stay allowed
    while the kernel makes its own model calls). Adds to `st` (what `confine_process` returned); honours
    RLM_REQUIRE_CONFINEMENT."""
    if not any(layer.name == "seccomp" and layer.active for layer in st.layers):
        return
    families = seccomp.NETWORK_FAMILIES if st.network else ()
    try:
        seccomp.install_socket_filter(allowed_families=families)
        what = (
            "new sockets: only TCP/UDP for model calls (no Unix, netlink, raw or packet sockets)"
            if st.network
            else "no new sockets of any kind"
        )
        st.layers.append(Layer("seccomp sockets", True, what + "; on every thread (TSYNC)"))
    except seccomp.SeccompUnavailable as exc:
        st.layers.append(Layer("seccomp sockets", False, f"unavailable: {exc.strerror or exc}"))
    _require(st)


def _require(st: Status) -> None:
    if os.environ.get(REQUIRE_ENV) != "1":
        return
    missing = [f"{layer.name} ({layer.detail})" for layer in st.layers if not layer.active]
    if missing:
        raise ConfinementRequired(
            f"{REQUIRE_ENV}=1 but OS confinement is incomplete: {'; '.join(missing)}. The kernel does not "
            f"start; run it on Linux with Landlock and seccomp, or unset {REQUIRE_ENV}."
        )
