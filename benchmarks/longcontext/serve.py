"""The benchmark's model server: the offline coder GGUF behind xllamacpp's llama.cpp HTTP server.

    python -m benchmarks.longcontext.serve --port 0 --url-file /tmp/team/coder-url

Serves `coder_gguf()` (or `--gguf`) as model `coder` with `--slots` slots of `--ctx` tokens each (a request's
window is `--ctx`; the KV cache holds slots × ctx), `--threads` threads and `OMP_WAIT_POLICY=PASSIVE`, and
writes `BASE_URL MODEL` to `--url-file` once `/health` answers. Runs until killed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["main", "xllamacpp_server"]

ROOT = Path(__file__).resolve().parent.parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def xllamacpp_server(gguf: str, ctx: int, threads: int = 2) -> Iterator[str]:
    """This module's server in a child process for the duration of a `with` (one slot of `ctx` tokens).

    Yields its OpenAI base URL (`http://127.0.0.1:PORT/v1`) once it answers; stops it on exit.
    """
    with tempfile.TemporaryDirectory() as tmp:
        url_file = Path(tmp) / "url"
        log = open(Path(tmp) / "log", "w+b")  # noqa: SIM115 - closed below
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.longcontext.serve",
            "--gguf",
            gguf,
            "--ctx",
            str(ctx),
            "--slots",
            "1",
            "--threads",
            str(threads),
            "--url-file",
            str(url_file),
        ]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
        try:
            deadline = time.monotonic() + 600
            while not url_file.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(
                        f"the xllamacpp server did not start: {log.read()[-2000:].decode(errors='replace')}"
                    )
                time.sleep(0.5)
            yield url_file.read_text().split()[0]
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
            if proc.poll() is None:
                proc.kill()
            log.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", help="the GGUF to serve (default: the verified coder model)")
    parser.add_argument("--alias", default="coder")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--ctx", type=int, default=16384, help="tokens per request (per slot)")
    parser.add_argument("--slots", type=int, default=2, help="requests served at once")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--url-file", help="write 'BASE_URL MODEL' here once the server answers")
    args = parser.parse_args(argv)
    if os.environ.get("OMP_WAIT_POLICY") != "PASSIVE":  # must be set before the OpenMP runtime loads
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        os.execv(
            sys.executable, [sys.executable, "-m", "benchmarks.longcontext.serve", *(argv or sys.argv[1:])]
        )
    import httpx
    import xllamacpp as x

    gguf = args.gguf
    if not gguf:
        from rlm_kernel.llm.coder_model import coder_gguf

        gguf = str(coder_gguf())
    port = args.port or _free_port()
    p = x.CommonParams()
    p.model.path = gguf
    p.model_alias = args.alias
    p.n_parallel = args.slots
    p.n_ctx = args.ctx * args.slots
    p.kv_unified = False
    p.no_extra_bufts = True
    p.cpuparams.n_threads = p.cpuparams_batch.n_threads = args.threads
    p.hostnames = ["127.0.0.1"]
    p.port = port
    server = x.Server(p)  # noqa: F841 - serves while referenced
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(1)
    print(f"ready {base}/v1 {args.alias}", flush=True)
    if args.url_file:
        Path(args.url_file).write_text(f"{base}/v1 {args.alias}\n")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    raise SystemExit(main())
