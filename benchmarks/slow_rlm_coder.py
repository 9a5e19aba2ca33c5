"""Slow benchmark: the root loop driven by a real small model on three long-context tasks (issue 17 item 11).

Tasks: find one line in 150K chars, count matching lines in 100K chars, join two facts far apart. Each runs
through `rlm_run`'s loop (`run_rlm`, the same code `%%rlm` uses) against an OpenAI-compatible server, and —
with `--reference` and PyPI `rlms` installed — through the reference library on the same server.

Not part of `benchmarks.run` (a run takes 10–40 minutes on 2 busy cores). Command:

    python -m benchmarks.slow_rlm_coder --gguf /path/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf  # serves it
    python -m benchmarks.slow_rlm_coder --base-url http://127.0.0.1:8080/v1 --model NAME      # running

Options: `--tasks find,count,join`, `--max-iterations 8`, `--ctx 16384`, `--reference`, `--out FILE`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TASKS", "Task", "main", "make_tasks"]

HERE = Path(__file__).resolve().parent
SERVICES = ["auth", "billing", "search", "cart", "mailer", "images", "reports", "gateway"]
WORDS = "request served cache warm user session token refreshed queue drained job retried slow disk".split()


@dataclass(frozen=True)
class Task:
    """One question over one context, and how to tell a right answer."""

    name: str
    question: str
    context: str
    expected: str
    check: Callable[[str], bool]


def _log_lines(rng: random.Random, n: int, levels: tuple[str, ...] = ("INFO", "DEBUG", "WARN")) -> list[str]:
    lines = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))
        lines.append(
            f"2026-03-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d} {rng.choice(levels):5} "
            f"[{rng.choice(SERVICES)}] {words}"
        )
    return lines


def _fit(lines: list[str], chars: int) -> list[str]:
    out, total = [], 0
    for line in lines:
        if total + len(line) + 1 > chars:
            break
        out.append(line)
        total += len(line) + 1
    return out


def make_tasks(seed: int = 7) -> list[Task]:
    """The three tasks, deterministic for a seed."""
    rng = random.Random(seed)
    # find: one line in ~150K chars
    lines = _fit(_log_lines(rng, 4000), 150_000)
    code = f"{rng.randint(1000, 9999)}-{rng.choice(['ALPHA', 'BRAVO', 'DELTA', 'OSCAR'])}"
    at = int(len(lines) * 0.63)
    lines[at] = lines[at].split("[")[0] + f"[vault] the maintenance override code is {code}"
    find = Task(
        "find",
        "What is the maintenance override code mentioned in the log?",
        "\n".join(lines),
        code,
        lambda a, c=code: c in a,
    )
    # count: lines of one level in ~100K chars
    lines = _fit(_log_lines(rng, 3000, ("INFO", "DEBUG", "WARN", "INFO", "INFO", "ERROR")), 100_000)
    errors = sum(1 for line in lines if " ERROR " in line)
    count = Task(
        "count",
        "How many log lines have the level ERROR?",
        "\n".join(lines),
        str(errors),
        lambda a, n=errors: re.search(rf"(?<!\d){n}(?!\d)", a.replace(",", "")) is not None,
    )
    # join: a person's badge near the start, the badge's door near the end
    lines = _fit(_log_lines(rng, 4000), 120_000)
    badge = str(rng.randint(10000, 99999))
    room = f"{rng.randint(2, 9)}{rng.choice('ABCDEF')}"
    lines[int(len(lines) * 0.05)] = (
        lines[0].split("[")[0] + f"[badges] badge {badge} was issued to Marta Quist"
    )
    lines[int(len(lines) * 0.93)] = (
        lines[0].split("[")[0] + f"[doors] badge {badge} opened the door of room {room}"
    )
    join = Task(
        "join",
        "Which room's door did Marta Quist's badge open?",
        "\n".join(lines),
        room,
        lambda a, r=room: re.search(rf"(?<![0-9A-Za-z]){r}(?![0-9A-Za-z])", a) is not None,
    )
    return [find, count, join]


TASKS = ("find", "count", "join")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def xllamacpp_server(gguf: str, ctx: int, threads: int = 2) -> Iterator[str]:
    """Serve `gguf` with xllamacpp (one slot, `ctx` tokens, no AMX extra buffers); yields a URL."""
    port = _free_port()
    script = (
        "import sys, time, xllamacpp as x\n"
        "p = x.CommonParams(); p.model.path = sys.argv[1]; p.model_alias = 'coder'\n"
        "p.n_ctx = int(sys.argv[2]); p.n_parallel = 1; p.no_extra_bufts = True\n"
        "p.cpuparams.n_threads = p.cpuparams_batch.n_threads = int(sys.argv[3])\n"
        "p.hostnames = ['127.0.0.1']; p.port = int(sys.argv[4])\n"
        "s = x.Server(p); print('ready', flush=True)\n"
        "while True: time.sleep(3600)\n"
    )
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", script, gguf, str(ctx), str(threads), str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            import httpx

            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(
                        f"xllamacpp server exited: {log.read()[-2000:].decode(errors='replace')}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                        break
                time.sleep(1)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
            if proc.poll() is None:
                proc.kill()


def run_ours(task: Task, max_iterations: int) -> dict:
    """One task through the root loop (the code `rlm_run` and `%%rlm` run)."""
    from rlm_kernel.repl import context as ctxmod
    from rlm_kernel.repl.state import RunOptions
    from rlm_kernel.rootloop.driver import run_rlm

    started = time.monotonic()
    result = run_rlm(
        task.question,
        ctxmod.load(task.context, kind="text"),
        options=RunOptions(max_iterations=max_iterations, max_depth=1),
    )
    answer = result.answer or ""
    turns = []
    for t in result.trajectory:
        turns.append(
            {
                "code": t.code,
                "stdout": t.stdout[:600],
                "error": (t.error or "")[:300],
                "note": t.note[:300],
                "calls": [(c.kind, c.saw_context, c.ok) for c in t.calls],
                "reply": t.reply[:1500],
            }
        )
    return {
        "library": "rlm-kernel",
        "task": task.name,
        "termination": result.termination,
        "answer": answer[:500],
        "expected": task.expected,
        "correct": result.termination == "final" and task.check(answer),
        "iterations": result.iterations,
        "calls": result.calls,
        "seconds": round(time.monotonic() - started, 1),
        "turns": turns,
    }


def run_reference(task: Task, base_url: str, model: str, max_iterations: int) -> dict:
    """One task through the reference library (PyPI `rlms`) on the same server."""
    from rlm import RLM  # type: ignore[import-not-found]

    started = time.monotonic()
    error = None
    answer = ""
    try:
        rlm = RLM(
            backend="openai",
            backend_kwargs={"model_name": model, "base_url": base_url, "api_key": "sk-local"},
            environment="local",
            max_iterations=max_iterations,
            verbose=False,
        )
        out = rlm.completion(task.context, root_prompt=task.question)
        answer = str(getattr(out, "response", out))
    except Exception as err:  # noqa: BLE001 - report the library's failure as the outcome
        error = f"{type(err).__name__}: {str(err)[:300]}"
    return {
        "library": "rlms",
        "task": task.name,
        "termination": "error" if error else "returned",
        "answer": answer[:500],
        "expected": task.expected,
        "correct": error is None and task.check(answer),
        "error": error,
        "seconds": round(time.monotonic() - started, 1),
    }


def _configure(base_url: str, model: str, ctx: int, cache_dir: str) -> None:
    os.environ.update(
        {
            "RLM_PROVIDER": "openai",
            "RLM_BASE_URL": base_url,
            "RLM_API_KEY": "sk-local",
            "RLM_MODEL": model,
            "RLM_CONTEXT_WINDOW": str(ctx),
            "RLM_CACHE": "readwrite",
            "RLM_CACHE_DIR": cache_dir,
            "RLM_TIMEOUT": "900",
            "RLM_MAX_RETRIES": "0",
            "RLM_MAX_TOKENS": "512",
            "RLM_WALL_SECONDS": "3600",
            "RLM_CPU_SECONDS": "3600",
        }
    )
    os.environ.pop("RLM_CONFIG", None)
    from rlm_kernel import llm

    llm.reset_client()


def _write(path: str, rows: list[dict]) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}, indent=2)
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--gguf", help="a GGUF file to serve with xllamacpp for the run")
    where.add_argument("--base-url", help="an OpenAI-compatible server that is already running")
    parser.add_argument("--model", default="coder", help="the model name to send (default: coder)")
    parser.add_argument("--ctx", type=int, default=16384, help="the server's window in tokens")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--max-iterations", type=int, default=8)
    parser.add_argument("--reference", action="store_true", help="also run PyPI `rlms` on the same server")
    parser.add_argument("--cache-dir", default=str(HERE / "results" / "rlm_coder_cache"))
    parser.add_argument("--out", default=str(HERE / "results" / "rlm_coder.json"))
    args = parser.parse_args(argv)
    chosen = [t for t in make_tasks() if t.name in args.tasks.split(",")]
    with contextlib.ExitStack() as stack:
        base_url = args.base_url or stack.enter_context(xllamacpp_server(args.gguf, args.ctx))
        _configure(base_url, args.model, args.ctx, args.cache_dir)
        rows = []
        for task in chosen:
            row = run_ours(task, args.max_iterations)
            rows.append(row)
            print(
                f"rlm-kernel {task.name:6} {row['termination']:15} correct={row['correct']!s:5} "
                f"turns={row['iterations']} {row['seconds']:.0f}s answer={row['answer'][:80]!r}",
                flush=True,
            )
            _write(args.out, rows)
            if args.reference:
                ref = run_reference(task, base_url, args.model, args.max_iterations)
                rows.append(ref)
                print(
                    f"rlms       {task.name:6} {ref['termination']:15} correct={ref['correct']!s:5} "
                    f"{ref['seconds']:.0f}s answer={ref['answer'][:80]!r} {ref.get('error') or ''}",
                    flush=True,
                )
    out = _write(args.out, rows)
    ours = [r for r in rows if r["library"] == "rlm-kernel"]
    print(
        f"\nrlm-kernel: {sum(r['correct'] for r in ours)} of {len(ours)} right with an accepted FINAL; "
        f"wrote {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
