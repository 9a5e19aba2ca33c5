"""The cost of evidence without `--cite` (issue 28): finding which spans of a 10 MB context a sub-call's
prompt holds (`repl.prompt_spans.spans_in`) and picking an answer's evidence among 2,000 map prompts
(`repl.evidence.for_run`), against one linear pass over the context (`str.lower`) in the same run; and the
worst case, every answer sharing the answer's words while every prompt is 8 KB of prose without context.

Run: `python -m benchmarks.bench_evidence [--mb 10] [--items 2000]` (CPU time of this process).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.evidence import Seen, for_run
from rlm_kernel.repl.prompt_spans import spans_in
from rlm_kernel.repl.state import ChildCall

FACT = "The harbour master signed the lease on 14 March 1887."
INSTRUCTION = (
    "You are reading one part of a large corpus. Answer the question from this part only, or say that it "
    "does not tell. Question: when was the lease signed?\n\nPart:\n"
)


def build(root: Path, mb: float, files: int = 100, seed: int = 1) -> ctxmod.LoadedContext:
    """`files` text files of random words (one FACT line in the middle one) under `root`, loaded."""
    write_corpus(root, mb, files, seed)
    before = os.environ.get("RLM_CONTEXT_ROOTS")
    os.environ["RLM_CONTEXT_ROOTS"] = f"={root.parent}"
    try:
        return ctxmod.load(str(root))
    finally:
        if before is None:
            del os.environ["RLM_CONTEXT_ROOTS"]
        else:
            os.environ["RLM_CONTEXT_ROOTS"] = before


def write_corpus(root: Path, mb: float, files: int = 100, seed: int = 1) -> None:
    """Write `files` text files of random words, `mb` MB in all, FACT on a line of the middle one."""
    rng = random.Random(seed)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(5000)
    ]
    per_file = int(mb * 1_000_000 / files)
    root.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        lines, size = [], 0
        while size < per_file:
            line = " ".join(rng.choice(words) for _ in range(12))
            lines.append(line)
            size += len(line) + 1
        if f == files // 2:
            lines.insert(len(lines) // 2, FACT)
        (root / f"part{f:03}.txt").write_text("\n".join(lines) + "\n")


def seen_items(loaded: ctxmod.LoadedContext, items: int, part: int = 5000) -> list[Seen]:
    """One batch of `items` map prompts (INSTRUCTION + a slice of `part` chars) spread over the context;
    the one whose slice holds FACT answers with it, four others with a near miss (the year only)."""
    text = loaded.value
    at = text.index(FACT)
    step = max((len(text) - part) // items, 1)
    starts = [min(i * step, len(text) - part) for i in range(items)]
    starts[items // 2] = max(at - part // 2, 0)
    out = []
    for n, s in enumerate(starts, start=1):
        prompt = INSTRUCTION + text[s : s + part]
        answer = "It was signed on 14 March 1887." if FACT in prompt else "This part does not tell."
        if n in (3, 30, 300, 1000):
            answer = "Something happened in 1887, it says."
        out.append((n, (prompt,), answer))
    return [Seen(ChildCall("llm_query_batched", "", True, saw_context=True), out)]


def _cpu(fn, repeat: int = 3) -> float:  # noqa: ANN001 - a callable
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=10)
    ap.add_argument("--items", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        loaded = build(Path(tmp) / "c", args.mb)
        text = loaded.value
        seen = seen_items(loaded, args.items)
        prompts = [p[0] for _, p, _ in seen[0].items[:50]]
        prose = "This prompt is the model's own prose and holds no context at all. " * 120
        linear = _cpu(lambda: text.lower())
        per_prompt = _cpu(lambda: [spans_in(p, text) for p in prompts]) / len(prompts)
        prose_cost = _cpu(lambda: spans_in(prose, text))
        answer = "The lease was signed on 14 March 1887."
        whole = _cpu(lambda: for_run(answer, "When was the lease signed?", seen, loaded))
        found = for_run(answer, "When was the lease signed?", seen, loaded)
        blind = [Seen(seen[0].call, [(n, (prose,), "March 1887") for n in range(1, args.items + 1)])]
        worst = _cpu(lambda: for_run(answer, "When was the lease signed?", blind, loaded), repeat=1)
    print(
        f"context: {len(text):,} chars, {len(loaded.files)} files; {args.items:,} map prompts of 5,000 chars"
    )
    print(f"one linear pass (str.lower): {linear * 1000:.1f} ms")
    print(f"spans_in, a map prompt: {per_prompt * 1000:.2f} ms")
    print(f"spans_in, {len(prose):,} chars of prose without context: {prose_cost * 1000:.1f} ms")
    print(f"for_run over {args.items:,} items: {whole * 1000:.1f} ms ({whole / linear:.1f}x one linear pass)")
    print(f"worst case (12 prose prompts searched, none holds context): {worst * 1000:.0f} ms")
    print(f"evidence: {[(e['where'], e['item']) for e in found]}")


if __name__ == "__main__":
    main()
