"""extract_functions accuracy and speed per language and engine against ground truth on real corpora.

Ground truth: Python's `ast` (CPython stdlib), tree-sitter (Go, npm JS/TS); matched on (name, start_line).
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from benchmarks.common import Figure
from benchmarks.corpora import read_corpus
from rlm_kernel.analysis.errors import AnalysisInputError
from rlm_kernel.analysis.extract import extract_functions, python_ast, treesitter
from rlm_kernel.analysis.extract.common import normalise_newlines

__all__ = ["Score", "evaluate", "pathological_matrix", "robustness", "run"]


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    end_ok: int = 0
    seconds: float = 0.0
    truth_seconds: float = 0.0
    nbytes: int = 0
    misses: Counter = field(default_factory=Counter)

    @property
    def precision(self) -> float:
        return self.tp / max(1, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return self.tp / max(1, self.tp + self.fn)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)

    @property
    def end_accuracy(self) -> float:
        return self.end_ok / max(1, self.tp)


def truth(text: str, language: str) -> list[dict]:
    text = normalise_newlines(text)
    if language == "python":
        return python_ast.extract(text)
    return treesitter.extract(text, language)


def evaluate(language: str, engine: str, files: list[tuple[str, str]], keep_examples: int = 0) -> Score:
    score = Score()
    examples: list[str] = []
    for path, text in files:
        try:
            t0 = time.process_time()
            expected = truth(text, language)
            score.truth_seconds += time.process_time() - t0
        except (SyntaxError, ValueError, RecursionError):
            continue  # not valid source for the ground truth: not counted
        t0 = time.process_time()
        got = extract_functions(text, language, engine=engine)
        score.seconds += time.process_time() - t0
        score.nbytes += len(text.encode("utf-8", "surrogatepass"))
        want = {(r["name"], r["start_line"]): r for r in expected}
        have = {(r["name"], r["start_line"]): r for r in got}
        for key, r in have.items():
            if key in want:
                score.tp += 1
                if want[key]["end_line"] == r["end_line"]:
                    score.end_ok += 1
                elif len(examples) < keep_examples:
                    examples.append(f"END {path}:{key} want {want[key]['end_line']} got {r['end_line']}")
            else:
                score.fp += 1
                if len(examples) < keep_examples:
                    examples.append(f"FP  {path}:{key} {r['signature'][:60]}")
        for key in want.keys() - have.keys():
            score.fn += 1
            if len(examples) < keep_examples:
                examples.append(f"FN  {path}:{key} {want[key]['signature'][:60]}")
    score.misses = Counter(examples)
    return score


def robustness(quick: bool = True) -> list[tuple[str, float, float]]:
    """(case, CPU seconds, megabytes) for pathological inputs through the default engine.

    CPU time of this process, not wall time: the benchmark machine's cores are shared.
    """
    cases = {
        "random bytes 1MB js": (os.urandom(1_000_000).decode("latin-1"), "javascript"),
        "random bytes 1MB py": (os.urandom(1_000_000).decode("latin-1"), "python"),
        "unclosed function 100KB js": ("function f(a, b {\n" * 5600, "javascript"),
        "unclosed function 100KB ts": ("function f(a, b {\n" * 5600, "typescript"),
        "deep braces 1MB js": ("{" * 500_000 + "}" * 500_000, "javascript"),
        "deep braces 1MB go": ("func f() " + "{" * 500_000 + "}" * 500_000, "go"),
        "deep parens 1MB py": ("x = " + "(" * 1_000_000, "python"),
        "NUL bytes 1MB go": ("func f() {\x00}\n" * 80_000, "go"),
        "dense minified JS 1MB (~50K functions/MB)": (
            "function a(b){return b};var c=function(d){return d};var e=(f)=>f*2;o={m(x){return x},k:(y)=>y};"
            * 10_500,
            "javascript",
        ),
        "mixed line endings 1MB ts": ("function a() {\r\n}\rfunction b() {\n}\r\n" * 30_000, "typescript"),
    }
    for language in ("python", "javascript"):
        text = "\n".join(t for _, t in read_corpus(language, 10_500_000))[:10_000_000]
        cases[f"10 MB real {language} file"] = (text, language)
    out = []
    for name, (text, language) in cases.items():
        t0 = time.process_time()
        extract_functions(text, language)
        out.append((name, time.process_time() - t0, len(text.encode("utf-8", "surrogatepass")) / 1e6))
    return out


_HEADS = {
    "python": "def f(a, b):\n    return a + b\n",
    "go": "func f(a int, b int) int {\n\treturn a + b\n}\n",
    "javascript": "function f(a, b) {\n  return a + b;\n}\n",
    "typescript": "function f(a: number, b: number): number {\n  return a + b;\n}\n",
}
_UNCLOSED = {
    "python": "def f(a, b:\n",
    "go": "func f(a int, b {\n",
    "javascript": "function f(a, b {\n",
    "typescript": "function f(a: number, b {\n",
}


def _pathological(kind: str, language: str, size: int) -> str:
    rng = random.Random(size)
    if kind == "closing brackets":
        return _HEADS[language] + "}" * size
    if kind == "unclosed headers":
        return _UNCLOSED[language] * (size // len(_UNCLOSED[language]))
    if kind == "random Latin-1":
        return _HEADS[language] + bytes(rng.randrange(256) for _ in range(size)).decode("latin-1")
    return "".join(chr(rng.randrange(32, 127)) if rng.random() < 0.95 else "\n" for _ in range(size))


PATHOLOGICAL_KINDS = ("closing brackets", "unclosed headers", "random Latin-1", "random printable")


def pathological_matrix(sizes: tuple[int, int] = (100_000, 1_000_000)) -> list[Figure]:
    """Per language and engine: the worst s/MB over the pathological kinds at each size, and the worst growth
    of the time for 10x the input (best of 3 CPU runs each; engine="exact" may raise: time to the error)."""
    figures = []
    for language in _HEADS:
        extract_functions(_HEADS[language], language)  # patterns and grammars load outside the timings
        for engine in ("auto", "exact", "regex"):
            worst: dict[int, tuple[float, str]] = {}
            growth = (0.0, "")
            for kind in PATHOLOGICAL_KINDS:
                times = []
                for size in sizes:
                    text = _pathological(kind, language, size)
                    best = float("inf")
                    for _ in range(3):
                        t0 = time.process_time()
                        try:
                            extract_functions(text, language, engine=engine)
                        except AnalysisInputError:
                            pass
                        best = min(best, time.process_time() - t0)
                    times.append(best)
                    per_mb = best / (size / 1e6)
                    if per_mb > worst.get(size, (-1.0, ""))[0]:
                        worst[size] = (per_mb, kind)
                ratio = times[1] / max(times[0], 0.02)  # below 20 ms a busy machine's noise dominates
                if ratio > growth[0]:
                    growth = (ratio, kind)
            for size, (per_mb, kind) in worst.items():
                figures.append(
                    Figure(
                        f"pathological {language} {engine} at {size / 1e6:g} MB, worst",
                        per_mb,
                        "s/MB",
                        target="<= 1 s/MB",
                        met=per_mb <= 1.0,
                        note=kind,
                    )
                )
            figures.append(
                Figure(
                    f"pathological {language} {engine} growth for 10x input, worst",
                    growth[0],
                    "x",
                    target="<= 12x",
                    met=growth[0] <= 12,
                    note=growth[1],
                )
            )
    return figures


LANG_BYTES_QUICK = {"python": 4_000_000, "go": 4_000_000, "javascript": 4_000_000, "typescript": 3_000_000}


def run(quick: bool) -> list[Figure]:
    figures: list[Figure] = []
    for language, quick_bytes in LANG_BYTES_QUICK.items():
        files = read_corpus(language, quick_bytes if quick else None)
        for engine, f1_target in (("regex", 0.98), ("auto", 0.995)):
            s = evaluate(language, engine, files)
            mb = s.nbytes / 1e6
            figures += [
                Figure(
                    f"{language} {engine} F1",
                    s.f1,
                    "",
                    target=f">= {f1_target}",
                    met=s.f1 >= f1_target,
                    note=f"P={s.precision:.4f} R={s.recall:.4f} tp={s.tp} fp={s.fp} fn={s.fn} on {mb:.1f} MB",
                ),
                Figure(
                    f"{language} {engine} end lines right",
                    s.end_accuracy,
                    "",
                    target=">= 0.99",
                    met=s.end_accuracy >= 0.99,
                ),
                Figure(
                    f"{language} {engine} throughput",
                    mb / max(s.seconds, 1e-9),
                    "MB/s CPU",
                    baseline=mb / max(s.truth_seconds, 1e-9),
                    baseline_name="ground-truth parser",
                ),
            ]
    figures += pathological_matrix()
    for name, seconds, mb in robustness(quick):
        figures.append(
            Figure(f"robustness: {name}", seconds / mb, "s/MB", target="<= 1 s/MB", met=seconds / mb <= 1.0)
        )
    return figures
