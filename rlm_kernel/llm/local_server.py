"""The offline model's server process: xllamacpp's built-in llama.cpp HTTP server, watched by its kernel.

Run as `python -m rlm_kernel.llm.local_server --parent-pid PID --model GGUF ...` by `rlm_kernel.llm.local`,
never imported by the kernel itself: a crash in llama.cpp (e.g. a segfault) kills this process only, and the
kernel reports it. The process exits by itself when its kernel is gone, even after a SIGKILL.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time

__all__ = ["main"]


def _watch_parent(parent_pid: int) -> None:
    """Exit this server process when the kernel that started it is gone (even after a SIGKILL)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(0)


def _lift_inherited_limits() -> None:
    """Undo the sandbox's per-cell soft limits this process inherited from the kernel cell that started it.

    A cell lowers RLIMIT_CPU's soft limit (a backstop for runaway C loops) and caps RLIMIT_AS; a child
    started inside a cell keeps them, so the model server would be killed by SIGXCPU after a minute or two
    of inference. Soft limits may be raised up to the hard limit, which the sandbox leaves alone.
    """
    import resource

    for which in (resource.RLIMIT_CPU, resource.RLIMIT_AS):
        with contextlib.suppress(ValueError, OSError):
            _soft, hard = resource.getrlimit(which)
            resource.setrlimit(which, (hard, hard))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rlm_kernel.llm.local_server")
    p.add_argument("--parent-pid", type=int, required=True, help="exit when this process is gone")
    p.add_argument("--model", required=True, help="path of the GGUF file")
    p.add_argument("--alias", required=True, help="the model id the server answers to")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--threads", type=int, required=True, help="n_threads and n_threads_batch")
    p.add_argument("--ctx", type=int, required=True, help="context window in tokens")
    p.add_argument("--no-extra-bufts", action="store_true", help="disable llama.cpp's extra buffer types")
    p.add_argument("--jinja", action="store_true")
    p.add_argument("--ready-file", required=True, help="written (JSON) once the server listens")
    return p


def main(argv: list[str] | None = None) -> None:
    """Start the server with the given settings and serve until terminated or orphaned."""
    args = _parser().parse_args(argv)
    _lift_inherited_limits()
    threading.Thread(target=_watch_parent, args=(args.parent_pid,), daemon=True, name="parent-watch").start()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))

    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1  # one slot: the whole window for one request; concurrent calls queue
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.n_threads_http = 2
    params.no_extra_bufts = args.no_extra_bufts
    params.warmup = False
    params.use_jinja = args.jinja
    print(
        f"rlm-kernel local server: model={args.model} alias={args.alias} threads={args.threads} "
        f"ctx={args.ctx} no_extra_bufts={args.no_extra_bufts} "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '')}\n{xlc.get_system_info()}",
        flush=True,
    )
    server = xlc.Server(params)
    address = str(server.listening_address)
    tmp = f"{args.ready_file}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"address": address, "pid": os.getpid()}, fh)
    os.replace(tmp, args.ready_file)
    print(f"rlm-kernel local server: listening on {address}", flush=True)
    threading.Event().wait()  # the C++ server runs on its own threads; keep `server` alive


if __name__ == "__main__":
    main(sys.argv[1:])
