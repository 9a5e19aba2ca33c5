"""`python -m rlm_kernel -f CONNECTION_FILE`: launch the rlm kernel.

API keys in the environment reach a fresh process image through a pipe, so `/proc/self/environ` is clean.
"""

from __future__ import annotations

import json
import os
import sys

from rlm_kernel import secrets

__all__ = ["main"]


def _reexec_without_secrets() -> None:
    """If the environment holds API keys, re-exec this command without them, passing them over a pipe."""
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
    sys.stdout.flush()
    sys.stderr.flush()
    # sys.orig_argv keeps interpreter options (-X ..., -W ...) as well as `-m rlm_kernel -f FILE`
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def main() -> None:
    """Move secrets out of the environment, then start the kernel application."""
    if secrets.SECRETS_FD_VAR in os.environ:
        secrets.load_secrets_from_fd()
    else:
        _reexec_without_secrets()
    secrets.take_secrets_from_environ()

    from ipykernel.kernelapp import IPKernelApp

    from rlm_kernel.kernel import RLMKernel

    IPKernelApp.launch_instance(kernel_class=RLMKernel)


if __name__ == "__main__":
    main()
