"""`python -m rlm_kernel -f CONNECTION_FILE`: launch the rlm kernel, with its LLM broker.

The launcher forks the broker supervisor while the environment still holds the API keys, starts the first
broker, then re-executes itself as the kernel without any key: the kernel gets the broker's socket and the
*names* of the keys (it holds references to them), so neither `/proc/self/environ` nor its memory has a key.
The process is then confined by the OS (Landlock, seccomp) before ipykernel starts any thread.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # before any other import: nothing of the notebook's directory is imported as ours
    if not sys.flags.safe_path and sys.path:  # started without -P: `-m` put the working directory first
        del sys.path[0]
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]  # PYTHONPATH=":..." names the working directory

import gc  # noqa: E402 - after the import path is safe
import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path
from typing import TYPE_CHECKING

from rlm_kernel import secrets, settings_file

if TYPE_CHECKING:
    from rlm_kernel.sandbox.confine import KernelPaths, Status

__all__ = ["kernel_calls_models", "main"]


def kernel_calls_models() -> bool:
    """True when this kernel makes its own model calls: no broker could be started (the launcher then kept
    the keys in the kernel). With a broker — the normal case — the kernel needs no network, no cache and no
    programs, and the OS layer gives it none."""
    from rlm_kernel.handover import CONTROL_FD_VAR

    return CONTROL_FD_VAR not in os.environ


def _reexec_without_secrets() -> None:
    """Fallback when no broker can be started: re-exec without the keys, passing them over a pipe."""
    env = dict(os.environ)
    taken = {name: env.pop(name) for name in list(env) if secrets.is_secret_name(name)}
    if not taken:
        return
    read_fd, write_fd = os.pipe()
    payload = json.dumps(taken).encode("utf-8")
    if len(payload) >= 60_000:  # a pipe buffer holds 64 KiB; beyond that fall back to the in-process store
        os.close(read_fd)
        os.close(write_fd)
        return
    os.write(write_fd, payload)
    os.close(write_fd)
    os.set_inheritable(read_fd, True)
    env[secrets.SECRETS_FD_VAR] = str(read_fd)
    _exec(env)


def _exec(env: dict[str, str]) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    # sys.orig_argv keeps interpreter options (-X ..., -W ...) as well as `-m rlm_kernel -f FILE`; -P keeps
    # the working directory (the notebook's, a context root) off the kernel's import path
    safe = [] if sys.flags.safe_path else ["-P"]
    os.execve(sys.executable, [sys.executable, *safe, *sys.orig_argv[1:]], env)


def _start_broker_and_reexec() -> None:
    """Start the broker (it keeps the keys), then become the kernel without them.

    The supervisor forks the first broker while the kernel starts: the launcher asks for it and does not
    wait; the kernel reads the answer when it first talks to the broker."""
    from rlm_kernel.broker.supervisor import start_supervisor
    from rlm_kernel.handover import (
        BROKER_ASKED_VAR,
        CONTROL_FD_VAR,
        KEY_NAMES_VAR,
        ask_for_broker,
    )

    try:
        control = start_supervisor()
        ask_for_broker(control)
    except OSError as exc:
        print(f"rlm-kernel: could not start the LLM broker ({exc}); keys stay in the kernel", file=sys.stderr)
        _reexec_without_secrets()
        return
    env = dict(os.environ)
    names = sorted(name for name in env if secrets.is_secret_name(name))
    for name in names:
        del env[name]
    control.set_inheritable(True)
    env[CONTROL_FD_VAR] = str(control.fileno())
    env[BROKER_ASKED_VAR] = "1"
    env[KEY_NAMES_VAR] = ",".join(names)
    # the settings file may hold a key: the kernel gets its settings with the key as a reference, never the
    # file (the OS layer denies it)
    env[settings_file.AT_START_VAR] = settings_file.snapshot_for_kernel(os.environ)
    _exec(env)


def _adopt_broker() -> None:
    """In the re-executed kernel: take the broker's sockets into the kernel's LLM session (made here, the
    one every part of the kernel uses); hold each key name as a reference only."""
    from rlm_kernel.handover import key_ref, take_handover
    from rlm_kernel.llm.broker_link import BrokerLink
    from rlm_kernel.llm.session import LLMSession, activate

    names, sockets, answer_pending = take_handover()
    for name in names:
        secrets.set_secret(name, key_ref(name))
    if sockets is not None:
        activate(LLMSession(link=BrokerLink(*sockets, answer_pending=answer_pending)))


def main() -> None:
    """Start the broker and drop the keys (first run), or adopt the broker (re-executed), then the kernel."""
    from rlm_kernel.handover import CONTROL_FD_VAR

    # Start-up makes a few hundred thousand objects that live as long as the kernel: the cyclic collector
    # would scan them again and again while they are made (tens of ms) and find little garbage.
    gc.disable()
    calls_models = kernel_calls_models()  # before the hand-over takes the broker's variables
    if CONTROL_FD_VAR in os.environ:
        _adopt_broker()
    elif secrets.SECRETS_FD_VAR in os.environ:
        secrets.load_secrets_from_fd()
    else:
        _start_broker_and_reexec()
    secrets.take_secrets_from_environ()

    from ipykernel.kernelapp import IPKernelApp

    confinement = _confine_before_threads(calls_models)
    from rlm_kernel.kernel import RLMKernel

    app = IPKernelApp.instance(kernel_class=RLMKernel)
    app.initialize()
    app.kernel.shell.sandbox_session.confinement = confinement  # for the banner and %rlm security
    _confine_sockets_after_startup(confinement)
    gc.freeze()  # the start-up objects go to the permanent generation: later collections skip them
    gc.enable()
    app.start()


def _connection_file(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg == "-f" and i + 1 < len(argv):
            return os.path.abspath(argv[i + 1])
        for prefix in ("-f=", "--f=", "--IPKernelApp.connection_file=", "--connection-file="):
            if arg.startswith(prefix):
                return os.path.abspath(arg[len(prefix) :])
    return None


def _kernel_paths(cache: bool) -> KernelPaths:
    """The context roots and (`cache`: when the kernel makes its own model calls, without a broker) the LLM
    layer's files that confinement must leave open: its settings file and response cache directory. With a
    broker, the settings file (it may hold a key) and the broker's cache key are private: denied even where
    they lie inside a root."""
    from rlm_kernel.llm.config import config_path, load_config
    from rlm_kernel.private_files import cache_root, key_dir
    from rlm_kernel.repl.context import allowed_roots
    from rlm_kernel.sandbox.confine import KernelPaths

    try:
        roots = tuple(str(p) for p in allowed_roots())
    except Exception:  # noqa: BLE001 - no roots known: only the working directory
        roots = (os.getcwd(),)
    read: list[str] = []
    write: list[str] = []
    private = [str(key_dir()), str(cache_root())]  # denied even where a root holds them (~ as a root)
    try:  # other kernels' connection files (their keys): this kernel's own is granted by name
        from jupyter_core.paths import jupyter_runtime_dir

        private.append(jupyter_runtime_dir())
    except Exception:  # noqa: BLE001 - no jupyter_core: no runtime folder
        pass
    try:
        brokered = settings_file.snapshot_at_start(config_path()) is not None  # the launcher read the file
        (private if brokered else read).append(str(config_path()))
        config = load_config()
        if cache and getattr(config, "cache", "off") != "off":
            cache_dir = Path(config.cache_dir).expanduser().resolve()
            cache_dir.mkdir(parents=True, exist_ok=True)
            write.append(str(cache_dir))
    except Exception:  # noqa: BLE001 - a broken LLM config is reported when it is used, not here
        pass
    return KernelPaths(
        context_roots=roots, llm_read=tuple(read), llm_write=tuple(write), private=tuple(private)
    )


def _confine_before_threads(calls_models: bool) -> Status:
    """Landlock and the seccomp process filter, while this process has one thread (see README, Security)."""
    from rlm_kernel.sandbox.confine import ConfinementRequired, confine_process

    network = calls_models and os.environ.get("RLM_TEST_ONLY_KERNEL_NETWORK") != "off"
    programs = False
    dask = _dask_scheduler_configured()
    if network:
        from rlm_kernel.llm.local import local_model_available

        programs = local_model_available()  # the in-kernel local-model server is a program the kernel starts
    try:
        return confine_process(
            _connection_file(sys.argv[1:]),
            network=network or dask,
            programs=programs,
            paths=_kernel_paths(cache=network),
        )
    except ConfinementRequired as exc:
        print(f"rlm kernel: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(3) from None


def _dask_scheduler_configured() -> bool:
    """RLM_DASK_SCHEDULER set by the notebook's author: the kernel keeps TCP to reach the scheduler, and
    dask.distributed is imported now, while /proc is still readable (it reads /proc/meminfo at import)."""
    if not os.environ.get("RLM_DASK_SCHEDULER", "").strip():
        return False
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False  # load_corpus then reports the missing [dask] extra in the cell
    return True


def _confine_sockets_after_startup(confinement: Status) -> None:
    from rlm_kernel.sandbox.confine import ConfinementRequired, confine_sockets

    try:
        confine_sockets(confinement)
    except ConfinementRequired as exc:
        print(f"rlm kernel: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(3) from None


if __name__ == "__main__":
    main()
