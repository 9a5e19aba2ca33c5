"""The OS layer alone holds: with the sandbox policy switched off (RLM_UNSAFE_DISABLE_POLICY=1), a cell with
full Python still cannot read or write outside its roots, start programs or processes, make sockets, reach
other processes or widen its own rules — from the cell's thread, its own threads and ipykernel's loop threads.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlm_kernel.sandbox.confine import landlock, seccomp
from tests.kernel_client import KernelHarness


def _why_unconfinable() -> str | None:
    try:
        if landlock.abi_version() < 6:
            return "this Linux has Landlock below ABI 6 (no TCP rules or scoping)"
    except OSError as exc:
        return f"this system has no Landlock: {exc}"
    try:
        seccomp.load_library()
    except OSError as exc:
        return f"this system has no seccomp: {exc}"
    return None


REASON = _why_unconfinable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

CANARY = "canary-" + uuid.uuid4().hex
WHERE = ("main", "thread", "iopub", "control", "shell_channel")

# Cell prelude: run a probe on the cell's thread, a new thread, or ipykernel's IOPub/control loop threads.
PRELUDE = textwrap.dedent(
    """
    import ctypes, os, socket, subprocess, threading, IPython

    def run_on(where, fn):
        if where == "main":
            return fn()
        box, done = {}, threading.Event()
        def call():
            try:
                box["value"] = fn()
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()
        if where == "thread":
            threading.Thread(target=call).start()
        else:
            kernel = IPython.get_ipython().kernel
            owner = getattr(kernel, where + "_thread")
            thread = getattr(owner, "thread", owner)
            assert thread.is_alive() and thread is not threading.current_thread(), where
            owner.io_loop.add_callback(call)
        assert done.wait(30), "probe did not finish"
        if "error" in box:
            raise box["error"]
        return box["value"]

    def report(where, fn):
        try:
            value = run_on(where, fn)
        except OSError as exc:
            print("PROBE BLOCKED", type(exc).__name__, exc.errno)
        else:
            print("PROBE ALLOWED", repr(value)[:200])

    def must_succeed(rc, what):
        if rc != 0:
            raise OSError(rc, what + " failed")
        return rc

    def forked():
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        return pid

    def narrower_ruleset_then_read():
        from rlm_kernel.sandbox.confine import landlock
        rules = landlock.Rules(restrict_tcp_bind=False, restrict_tcp_connect=False, scope=False)
        rules.allow(["/"], landlock.FS_READ)
        landlock.restrict(rules)
        return open("/etc/shadow").read()

    def undo_no_new_privs():
        libc = ctypes.CDLL(None, use_errno=True)
        return must_succeed(libc.prctl(38, 0, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS, 0)")
    """
)

FILE_PROBES = {
    "read_home_file": "lambda: open(HOME_FILE).read()",
    "read_etc_shadow": "lambda: open('/etc/shadow').read()",
    "read_ipython_profile_file": "lambda: open(PROFILE_FILE).read()",
    "read_other_kernels_connection_file": "lambda: open(RUNTIME_FILE).read()",
    "write_outside_roots": "lambda: open(OUTSIDE + '/written.txt', 'w').write('x')",
    "proc_mem_of_other_process": "lambda: os.pread(os.open(f'/proc/{HELPER}/mem', 0), 16, MEM_ADDR)",
    "proc_environ_of_other_process": "lambda: open(f'/proc/{HELPER}/environ', 'rb').read()",
    "proc_environ_of_parent": "lambda: open(f'/proc/{os.getppid()}/environ', 'rb').read()",
    "subprocess_run": "lambda: subprocess.run(['/bin/sh', '-c', 'touch ' + MARKER])",
    "os_system": "lambda: must_succeed(os.system('touch ' + MARKER), 'os.system')",
    "posix_spawn": "lambda: os.posix_spawn('/bin/sh', ['/bin/sh', '-c', 'touch ' + MARKER], {})",
    "os_fork": "forked",
    "signal_other_process": "lambda: os.kill(HELPER, 0)",
    "signal_parent": "lambda: os.kill(os.getppid(), 0)",
    "unix_socket": "lambda: socket.socket(socket.AF_UNIX)",
    "netlink_socket": "lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)",
    "raw_ip_socket": "lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)",
    "undo_no_new_privs": "undo_no_new_privs",
    "second_ruleset_cannot_widen": "narrower_ruleset_then_read",
}
NET_PROBES = {
    "tcp_connect_loopback": "lambda: socket.create_connection(('127.0.0.1', TCP_PORT), timeout=5)",
    "udp_send_loopback": "lambda: socket.socket(type=2).sendto(b'x', ('127.0.0.1', UDP_PORT))",
}


class Setup:
    """What the probes aim at: files outside the roots, a helper process with a canary, loopback listeners."""

    def __init__(self, tmp: Path) -> None:
        self.outside = tmp / "outside"
        self.outside.mkdir()
        self.home_file = Path.home() / f".rlm-confine-test-{uuid.uuid4().hex}"
        self.home_file.write_text(CANARY)
        self.marker = tmp / "program-ran"
        from IPython.core.profiledir import ProfileDir
        from IPython.paths import get_ipython_dir
        from jupyter_core.paths import jupyter_runtime_dir

        profile = ProfileDir.create_profile_dir_by_name(get_ipython_dir(), "default").location
        self.profile_file = Path(profile) / f"rlm-confine-test-{uuid.uuid4().hex}.sqlite"
        self.profile_file.write_text(CANARY)
        Path(jupyter_runtime_dir()).mkdir(parents=True, exist_ok=True)
        self.runtime_file = Path(jupyter_runtime_dir()) / f"kernel-rlm-confine-test-{uuid.uuid4().hex}.json"
        self.runtime_file.write_text(CANARY)
        self.helper = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"], env={**os.environ, "RLM_CANARY": CANARY}
        )
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.settimeout(0.5)

    def cell_globals(self) -> str:
        return (
            f"HOME_FILE = {str(self.home_file)!r}; OUTSIDE = {str(self.outside)!r}\n"
            f"MARKER = {str(self.marker)!r}\n"
            f"PROFILE_FILE = {str(self.profile_file)!r}; RUNTIME_FILE = {str(self.runtime_file)!r}\n"
            f"HELPER = {self.helper.pid}; TCP_PORT = {self.tcp.getsockname()[1]}; "
            f"UDP_PORT = {self.udp.getsockname()[1]}; MEM_ADDR = {self.readable_address()}\n"
        )

    def readable_address(self) -> int:
        """The start of a readable mapping of the helper (reading it unconfined succeeds)."""
        for line in Path(f"/proc/{self.helper.pid}/maps").read_text().splitlines():
            span, perms = line.split()[:2]
            if perms.startswith("r"):
                return int(span.split("-")[0], 16)
        raise AssertionError("the helper has no readable mapping")

    def close(self) -> None:
        self.helper.kill()
        self.helper.wait()
        for path in (self.home_file, self.profile_file, self.runtime_file):
            path.unlink(missing_ok=True)
        self.tcp.close()
        self.udp.close()


def _start(setup: Setup, tmp: Path, env: dict[str, str]) -> KernelHarness:
    cwd = tmp / "notebook"
    cwd.mkdir()
    kernel = KernelHarness(
        env={"RLM_UNSAFE_DISABLE_POLICY": "1", "OPENAI_API_KEY": CANARY, **env},
        remove_env=("RLM_BASE_URL", "RLM_PROVIDER", "RLM_CONFIG"),
        cwd=str(cwd),
    )
    ex = kernel.execute(PRELUDE + setup.cell_globals())
    assert ex.ok, str(ex)
    return kernel


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    s = Setup(tmp_path_factory.mktemp("confine"))
    yield s
    s.close()


@pytest.fixture(scope="module", params=["network-off", "kernel-calls-models"])
def unsafe_kernel(request: pytest.FixtureRequest, setup: Setup, tmp_path_factory: pytest.TempPathFactory):
    env = {"RLM_TEST_ONLY_KERNEL_NETWORK": "off"} if request.param == "network-off" else {}
    kernel = _start(setup, tmp_path_factory.mktemp(request.param), env)
    kernel.mode = request.param  # type: ignore[attr-defined]
    yield kernel
    kernel.shutdown()


def _probe(kernel: KernelHarness, setup: Setup, expr: str, where: str) -> None:
    ex = kernel.execute(f"report({where!r}, {expr})")
    assert ex.ok, str(ex)
    assert "PROBE BLOCKED" in ex.stdout, f"{expr} on {where}: {ex.stdout}"
    assert ex.stdout.split()[2] in ("PermissionError", "OSError"), ex.stdout
    assert not setup.marker.exists(), "a program ran"
    assert not (setup.outside / "written.txt").exists()
    assert kernel.execute("6 * 7").result == "42", "the kernel is no longer usable"


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("probe", sorted(FILE_PROBES))
def test_full_python_gets_nothing(unsafe_kernel: KernelHarness, setup: Setup, probe: str, where: str) -> None:
    _probe(unsafe_kernel, setup, FILE_PROBES[probe], where)


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("probe", sorted(NET_PROBES))
def test_full_python_gets_no_network(
    unsafe_kernel: KernelHarness, setup: Setup, probe: str, where: str
) -> None:
    _probe(unsafe_kernel, setup, NET_PROBES[probe], where)


def test_key_not_in_environment(unsafe_kernel: KernelHarness) -> None:
    code = (
        "print(any(CANARY in v for v in os.environ.values()), "
        "CANARY.encode() in open('/proc/self/environ', 'rb').read())"
    )
    ex = unsafe_kernel.execute(code.replace("CANARY", repr(CANARY)))
    assert ex.stdout.split() == ["False", "False"], str(ex)


def test_key_not_in_kernel_memory(unsafe_kernel: KernelHarness) -> None:
    ex = unsafe_kernel.execute("import rlm_kernel.secrets as s; print(repr(s._store))")
    assert CANARY not in ex.all_text


def test_banner_says_unsafe_and_security_lists_layers(unsafe_kernel: KernelHarness) -> None:
    banner = unsafe_kernel.kc.kernel_info(reply=True)["content"]["banner"]
    assert "UNSAFE" in banner and "OS layer Landlock: active" in banner, banner
    text = unsafe_kernel.execute("%rlm security").all_text
    for needle in (
        "Landlock",
        "active — ABI",
        "seccomp sockets",
        "read root",
        "OFF — UNSAFE",
        "model endpoint",
    ):
        assert needle in text, text
    assert CANARY not in text


def test_every_thread_carries_the_filters(unsafe_kernel: KernelHarness) -> None:
    """Every thread of the kernel — ipykernel's, zmq's C threads, and one the cell starts — has no_new_privs
    and both seccomp filters: they were all created after the launcher confined the process."""
    code = textwrap.dedent(
        """
        started = threading.Event(); stop = threading.Event()
        worker = threading.Thread(target=lambda: (started.set(), stop.wait(10)))
        worker.start(); started.wait(10)
        rows = set()
        for tid in os.listdir('/proc/self/task'):
            text = open(f'/proc/self/task/{tid}/status').read()
            fields = dict(line.split(':', 1) for line in text.splitlines() if ':' in line)
            rows.add((fields['NoNewPrivs'].strip(), fields['Seccomp_filters'].strip()))
        stop.set()
        print(len(os.listdir('/proc/self/task')), sorted(rows))
        """
    )
    ex = unsafe_kernel.execute(code)
    count, rows = ex.stdout.split(" ", 1)
    assert int(count) >= 5, ex.stdout  # main, IOPub, control, shell channel, heartbeat, the worker ...
    assert rows.strip() == "[('1', '2')]", ex.stdout
