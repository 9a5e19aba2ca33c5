"""Slow benchmark: do root models recover better when failed calls raise or return "Error: …"? (issue 17/10)

The root model is the offline coder model (Qwen2.5-Coder-1.5B through xllamacpp, started by the local
provider's own runtime, `rlm_kernel.llm.local`), at temperature 0. Its calls and the child tier's go to one
`tests.llm_server` on loopback: a root call is forwarded to the coder server; a child call (`llm_query`,
`llm_query_batched`) is answered by a deterministic reader that knows the documents in the context, and
fails where the task says (HTTP 500 or a malformed reply on the first call that carries a given document),
with retries off so the failure reaches the root's code. Each task runs once per `errors_in_model_code` mode
(`raise`: the call raises QueryError / QueryBatchError; `string`: it returns "Error: <reason>", per item in a
batch). Recovered = the run ended with an accepted FINAL holding the right answer.

What is measured is what the root does after a failed call, so every run reaches one: the contexts are the
documents themselves (a 400-character memo; four report lines) and each question gives the first block (the
call). Without that, the 1.5B root never made a call that carried the document: hidden in a 12K-character
log, it searched for "MEMO" in `line.lower()` five turns running; over the memo alone and told to use
llm_query, it sent `llm_query("Which supplier does the context recommend? ")` four turns running.

Budget refusals are not among the faults: a call refused for budget ends the run in both modes.
Not part of `benchmarks.run` (about 20–40 minutes on 2 busy cores). Command:

    nice -n 15 python -m benchmarks.slow_error_mode            # all tasks, both modes
    nice -n 15 python -m benchmarks.slow_error_mode --tasks memo_500 --modes string --max-iterations 4

Root replies are cached by request in `--root-cache` (temperature 0: a re-run replays them and only re-runs
what changed); `--no-root-cache` asks the model every time. Results: benchmarks/results/error_mode.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MODES", "TASKS", "Task", "main", "make_tasks"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODES = ("raise", "string")
CHILD = "child-reader"  # the child tier's model name: answered by the deterministic reader


@dataclass(frozen=True)
class Doc:
    """A document inside the context: the reader recognises it by `marker` and answers with `answer`."""

    marker: str
    answer: str
    fault: str | None = None
    """"http500" or "malformed": the first child call that carries this document fails so; "always": every
    call that carries it fails with HTTP 500 (only code that reads the document itself can recover)."""


@dataclass(frozen=True)
class Task:
    """One question over one context; `check` tells a right answer."""

    name: str
    question: str
    context: str
    docs: tuple[Doc, ...]
    expected: str
    check: Callable[[str], bool]


def _memo(supplier: str, other: str, seed: str) -> str:
    return (
        f"MEMO facilities ({seed}): We compared two offers for the new office chairs. {other} was cheaper by "
        f"a small margin, but their delivery slipped twice last year and their warranty ends after one year. "
        f"{supplier} costs a little more, delivers within a week and repairs for five years. After the trial "
        "week the team was clear about which offer to take, and finance agreed it fits the budget."
    )


def _report(n: int, city: str, seed: str) -> str:
    return (
        f"REPORT {n}: Team {seed} spent the spring looking for a new base. The old office closed in March; "
        f"after weighing rents and flights they signed a lease in {city}, where the first desks were set up "
        "in May. Hiring continues there over the summer."
    )


def _in_order(answer: str, items: list[str]) -> bool:
    at = -1
    for item in items:
        found = answer.find(item, at + 1)
        if found < 0:
            return False
        at = found
    return True


def make_tasks(seed: int = 11) -> list[Task]:
    """The tasks, deterministic for a seed."""
    rng = random.Random(seed)  # the documents' markers
    tasks = []
    for name, supplier, other, fault in (
        ("memo_500", "Norland Seating", "Brix Office", "http500"),
        ("memo_malformed", "Teller & Voss", "Quorra Furniture", "malformed"),
    ):
        marker = f"memo {rng.randint(1000, 9999)}"
        context = _memo(supplier, other, marker)
        tasks.append(
            Task(
                name,
                "The context is a memo from the facilities team. Which supplier does it recommend? Start "
                "with this block, then answer with the supplier's name:\n```repl\nreply = llm_query('Which "
                "supplier does this memo recommend?\\n\\n' + context)\nprint(reply)\n```",
                context,
                (Doc(marker, f"The memo recommends {supplier}.", fault),),
                supplier,
                lambda a, s=supplier, o=other: s.lower() in a.lower() and o.lower() not in a.lower(),
            )
        )
    for name, cities, faults in (
        ("batch_1_of_4", ["Lisbon", "Tallinn", "Porto", "Ghent"], (None, None, "http500", None)),
        ("batch_2_of_4", ["Bergen", "Krakow", "Lyon", "Turku"], ("malformed", None, None, "http500")),
        ("batch_always", ["Oslo", "Riga", "Vigo", "Bari"], (None, "always", None, None)),
    ):
        markers = [f"T{rng.randint(100, 999)}" for _ in cities]
        reports = [_report(i, c, m) for i, (c, m) in enumerate(zip(cities, markers, strict=True), 1)]
        context = "\n".join(reports)
        docs = tuple(
            Doc(f"Team {m} spent", f"The team moved to {c}.", f)
            for m, c, f in zip(markers, cities, faults, strict=True)
        )
        tasks.append(
            Task(
                name,
                "The context has 4 lines, one report each; each names the city a team moved to. Start with "
                "this block, then answer with the 4 cities in line order, separated by commas:\n```repl\n"
                "replies = llm_query_batched(['Which city did the team move to?\\n\\n' + line for line in "
                "context.splitlines()])\nprint(replies)\n```",
                context,
                docs,
                ", ".join(cities),
                lambda a, cs=cities: _in_order(a, cs),
            )
        )
    return tasks


TASKS = ("memo_500", "memo_malformed", "batch_1_of_4", "batch_2_of_4", "batch_always")


@dataclass
class Reader:
    """The child tier: answers from the documents a prompt carries; a faulty document's first call fails."""

    docs: tuple[Doc, ...] = ()
    seen: set[str] = field(default_factory=set)
    injected: int = 0
    calls: int = 0

    def reset(self, docs: tuple[Doc, ...]) -> None:
        self.docs, self.seen, self.injected, self.calls = docs, set(), 0, 0

    def answer(self, prompt: str) -> object:
        from tests.llm_server import Fault

        self.calls += 1
        present = [d for d in self.docs if d.marker in prompt]
        for doc in present:
            if doc.fault == "always":
                self.injected += 1
                return Fault.http(500)
            if doc.fault and doc.marker not in self.seen:
                self.seen.add(doc.marker)
                self.injected += 1
                return Fault.http(500) if doc.fault == "http500" else Fault.malformed()
        if not present:
            return "The text I was given does not contain that information."
        return " ".join(d.answer for d in present)


class RootCache:
    """Root replies by request (a JSON file): the coder at temperature 0 gives the same reply again."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: dict[str, dict] = {}
        self.hits = 0
        if path is not None and path.exists():
            self.data = json.loads(path.read_text())
        self._lock = threading.Lock()

    @staticmethod
    def key(body: dict) -> str:
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def get(self, body: dict) -> dict | None:
        got = self.data.get(self.key(body))
        self.hits += got is not None
        return got

    def put(self, body: dict, reply: dict) -> None:
        if self.path is None:
            return
        with self._lock:
            self.data[self.key(body)] = reply
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data))
            os.replace(tmp, self.path)


def make_router(coder_url: str, coder_model: str, reader: Reader, cache: RootCache):  # noqa: ANN201
    """The test server's reply function: root calls go to the coder server, child calls to the reader."""
    from tests.llm_server import Reply

    async def forward(body: dict) -> Reply:
        import httpx

        hit = cache.get(body)
        if hit is None:
            async with httpx.AsyncClient(timeout=3600) as client:
                resp = await client.post(f"{coder_url}/chat/completions", json=body)
                resp.raise_for_status()
                data = resp.json()
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            hit = {
                "text": choice["message"].get("content") or "",
                "finish": choice.get("finish_reason"),
                "in": int(usage.get("prompt_tokens", 0)),
                "out": int(usage.get("completion_tokens", 0)),
            }
            cache.put(body, hit)
        return Reply(hit["text"], hit["finish"], hit["in"], hit["out"])

    def route(rec):  # noqa: ANN001, ANN202 - a RecordedRequest → a reply (or an awaitable of one)
        if rec.model == CHILD:
            return reader.answer(rec.prompt)
        body = dict(rec.body)
        body["model"] = coder_model
        return forward(body)

    return route


def run_one(task: Task, mode: str, max_iterations: int, reader: Reader) -> dict:
    """One task in one mode through the root loop (the code `rlm_run` and `%%rlm` run)."""
    from rlm_kernel.llm.session_settings import set_setting
    from rlm_kernel.repl import context as ctxmod
    from rlm_kernel.repl.state import RunOptions
    from rlm_kernel.rootloop.driver import run_rlm

    set_setting("errors_in_model_code", mode)  # as `%rlm set` does: the next client reads it
    reader.reset(task.docs)
    started = time.monotonic()
    result = run_rlm(
        task.question,
        ctxmod.load(task.context, kind="text"),
        options=RunOptions(max_iterations=max_iterations, max_depth=1, best_effort=False),
    )
    answer = result.answer or ""
    root_in = sum(t.root_usage.input_tokens for t in result.trajectory)
    root_out = sum(t.root_usage.output_tokens for t in result.trajectory)
    turns = [
        {
            "code": t.code,
            "stdout": t.stdout[:800],
            "error": (t.error or "")[:400],
            "note": t.note[:300],
            "calls": [(c.kind, c.ok, c.items, c.failed) for c in t.calls],
            "reply": t.reply[:1500],
        }
        for t in result.trajectory
    ]
    return {
        "task": task.name,
        "mode": mode,
        "termination": result.termination,
        "answer": answer[:300],
        "expected": task.expected,
        "recovered": result.termination == "final" and task.check(answer),
        "wrong_final": result.termination == "final" and not task.check(answer),
        "error_text_in_answer": "Error:" in answer,
        "turns_used": result.iterations,
        "root_input_tokens": root_in,
        "root_output_tokens": root_out,
        "child_calls": reader.calls,
        "faults_injected": reader.injected,
        "seconds": round(time.monotonic() - started, 1),
        "turns": turns,
    }


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per mode: runs, recovered, runs that met a fault, mean turns and root tokens."""
    out = {}
    for mode in MODES:
        mine = [r for r in rows if r["mode"] == mode]
        if not mine:
            continue
        n = len(mine)
        out[mode] = {
            "runs": n,
            "recovered": sum(r["recovered"] for r in mine),
            "met_a_fault": sum(r["faults_injected"] > 0 for r in mine),
            "recovered_after_a_fault": sum(r["recovered"] and r["faults_injected"] > 0 for r in mine),
            "wrong_final_accepted": sum(r.get("wrong_final", False) for r in mine),
            "mean_turns": round(sum(r["turns_used"] for r in mine) / n, 2),
            "mean_root_input_tokens": round(sum(r["root_input_tokens"] for r in mine) / n),
            "mean_root_output_tokens": round(sum(r["root_output_tokens"] for r in mine) / n),
        }
    return out


def _write(path: Path, rows: list[dict], meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **meta}
    data["summary"] = summary(rows)
    data["rows"] = rows
    path.write_text(json.dumps(data, indent=2))


def _configure(proxy_url: str, ctx: int) -> None:
    os.environ.update(
        {
            "RLM_PROVIDER": "local",
            "RLM_LOCAL_MODEL": "coder",
            "RLM_BASE_URL": proxy_url,
            "RLM_MODEL_FAST": CHILD,
            "RLM_MODEL_BALANCED": CHILD,
            "RLM_CONTEXT_WINDOW": str(ctx),
            "RLM_CACHE": "off",  # a cached child answer would skip the injected fault
            "RLM_MAX_RETRIES": "0",  # the fault reaches the root's code, not the retry loop
            "RLM_TIMEOUT": "3600",
            "RLM_MAX_TOKENS": "400",
            "RLM_TEMPERATURE": "0",
            "RLM_WALL_SECONDS": "7200",
            "RLM_CPU_SECONDS": "7200",
        }
    )
    os.environ.pop("RLM_CONFIG", None)
    for name in ("RLM_MODEL", "RLM_MODEL_POWERFUL", "RLM_ROOT_MODEL", "RLM_API_KEY"):
        os.environ.pop(name, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--max-iterations", type=int, default=5)
    parser.add_argument("--ctx", type=int, default=12288, help="the coder server's window in tokens")
    parser.add_argument("--root-cache", default=str(HERE / "results" / "error_mode_root_cache.json"))
    parser.add_argument("--no-root-cache", action="store_true")
    parser.add_argument("--out", default=str(HERE / "results" / "error_mode.json"))
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from rlm_kernel.llm import local
    from tests.llm_server import LLMTestServer

    names, modes = args.tasks.split(","), args.modes.split(",")
    chosen = [t for t in make_tasks() if t.name in names]
    os.environ.update({"RLM_PROVIDER": "local", "RLM_LOCAL_MODEL": "coder", "RLM_LOCAL_CTX": str(args.ctx)})
    os.environ.pop("RLM_BASE_URL", None)
    started = time.monotonic()
    coder_url = local.ensure_local_server("coder")  # the local provider's own runtime serves the coder
    server = local.local_server()
    coder_model = server.model if server is not None else "qwen2.5-coder-1.5b-instruct"
    print(f"coder server ready in {time.monotonic() - started:.0f}s at {coder_url}", flush=True)
    reader = Reader()
    cache = RootCache(None if args.no_root_cache else Path(args.root_cache))
    proxy = LLMTestServer().start()
    proxy.reply_with(make_router(coder_url, coder_model, reader, cache))
    _configure(proxy.openai_base_url, args.ctx)
    meta = {
        "model": coder_model,
        "max_iterations": args.max_iterations,
        "command": "python -m benchmarks.slow_error_mode " + " ".join(argv or sys.argv[1:]),
    }
    out = Path(args.out)
    rows: list[dict] = []
    try:
        for task in chosen:
            for mode in modes:
                row = run_one(task, mode, args.max_iterations, reader)
                rows.append(row)
                print(
                    f"{task.name:15} {mode:6} {row['termination']:15} recovered={row['recovered']!s:5} "
                    f"turns={row['turns_used']} faults={row['faults_injected']} "
                    f"root_tokens={row['root_input_tokens']}+{row['root_output_tokens']} "
                    f"{row['seconds']:.0f}s answer={row['answer'][:60]!r}",
                    flush=True,
                )
                _write(out, rows, {**meta, "root_cache_hits": cache.hits})
    finally:
        proxy.stop()
        local.stop_local_server()
    print(json.dumps(summary(rows), indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
