"""Slow benchmark: the issue's five plain long-context questions with a real model (the long-context suite's
`protocol` family; issue 17 item 11, issue 27).

Kept as the short command it was; the tasks, systems and recording now live in `benchmarks/longcontext/`.
`--reference` also runs PyPI `rlms` 0.1.3 (in its own venv, benchmarks/.venv-rlms, made on first use).

    python -m benchmarks.slow_rlm_coder --gguf /path/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf  # serves it
    python -m benchmarks.slow_rlm_coder --base-url http://127.0.0.1:8080/v1 --model NAME      # running

Options: `--tasks find,count,join,email-where,email-files`, `--max-iterations 8`, `--ctx 16384`,
`--reference`, `--out FILE`. The full suite: `python -m benchmarks.longcontext.run --help`.
"""

from __future__ import annotations

import argparse

from benchmarks.longcontext import run as longcontext
from benchmarks.longcontext.serve import xllamacpp_server

__all__ = ["TASKS", "main", "xllamacpp_server"]

TASKS = ("find", "count", "join", "email-where", "email-files")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--gguf")
    where.add_argument("--base-url")
    parser.add_argument("--model", default="coder")
    parser.add_argument("--ctx", type=int, default=16384)
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--max-iterations", type=int, default=8)
    parser.add_argument("--reference", action="store_true")
    parser.add_argument("--out", default=str(longcontext.RESULTS / "protocol.json"))
    args = parser.parse_args(argv)
    select = "^protocol/(" + "|".join(t.strip() for t in args.tasks.split(",")) + ")$"
    argv2 = ["--gguf", args.gguf] if args.gguf else ["--base-url", args.base_url]
    argv2 += [
        "--model",
        args.model,
        "--window",
        str(args.ctx),
        "--families",
        "protocol",
        "--select",
        select,
        "--systems",
        "ours,rlms" if args.reference else "ours",
        "--max-iterations",
        str(args.max_iterations),
        "--out",
        args.out,
    ]
    return longcontext.main(argv2)


if __name__ == "__main__":
    raise SystemExit(main())
