"""The report: per system, accuracy by family and length, calls, tokens, time and tokens per right answer.

    python -m benchmarks.longcontext.report benchmarks/results/longcontext/latest.json [--figure PNG]

prints a Markdown table (the one appended to benchmarks/README.md) and draws accuracy against context length,
one line per system (matplotlib, Agg).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

__all__ = ["figure", "summary", "table"]

RIGHT = 0.999  # a score at least this counts as a right answer (for cost per right answer and precision)


def _length_label(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{round(n / 1000)}K"


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per system: mean score per family and per (family, length), totals and tokens per right answer."""
    out: dict[str, dict] = {}
    by_system: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_system[row["system"]].append(row)
    for system, rs in by_system.items():
        fam: dict[str, list[float]] = defaultdict(list)
        cell: dict[tuple[str, int], list[float]] = defaultdict(list)
        for r in rs:
            fam[r["family"]].append(r["score"])
            cell[(r["family"], r["length"])].append(r["score"])
        right = sum(r["score"] >= RIGHT for r in rs)
        accepted = [r for r in rs if r.get("accepted")]
        tokens = sum(r["input_tokens"] + r["output_tokens"] for r in rs)
        out[system] = {
            "cases": len(rs),
            "mean": sum(r["score"] for r in rs) / len(rs),
            "right": right,
            "accepted": len(accepted),
            "precision": (sum(r["score"] >= RIGHT for r in accepted) / len(accepted)) if accepted else None,
            "families": {f: sum(v) / len(v) for f, v in fam.items()},
            "cells": {
                f"{f}@{_length_label(n)}": (sum(v) / len(v), len(v)) for (f, n), v in sorted(cell.items())
            },
            "calls": sum(r["calls"] for r in rs),
            "input_tokens": sum(r["input_tokens"] for r in rs),
            "output_tokens": sum(r["output_tokens"] for r in rs),
            "model_seconds": sum(r["model_seconds"] for r in rs),
            "wall_seconds": sum(r["wall_seconds"] for r in rs),
            "tokens_per_right": (tokens / right) if right else None,
            **_citation_figures(rs),
        }
    return out


def _citation_figures(rows: list[dict]) -> dict:
    """Under `--cite` (rows with a "citations" list): right answers carrying a citation the context holds
    (checked again by the benchmark), and accepted citations it does not hold (the target is 0)."""
    cited = [r for r in rows if "citations" in r]
    if not cited:
        return {}
    right = [r for r in cited if r["score"] >= RIGHT]
    return {
        "right_with_citation": sum(any(c["in_context"] for c in r["citations"]) for r in right),
        "right_under_cite": len(right),
        "false_citations": sum(not c["in_context"] for r in cited for c in r["citations"]),
    }


def table(rows: list[dict]) -> str:
    """Two Markdown tables: accuracy per family x length, then cost per system."""
    s = summary(rows)
    cells = sorted({c for v in s.values() for c in v["cells"]})
    head = "| system | " + " | ".join(cells) + " | mean |"
    lines = [head, "|" + "---|" * (len(cells) + 2)]
    for system, v in s.items():
        vals = [f"{v['cells'][c][0]:.2f}" if c in v["cells"] else "–" for c in cells]
        lines.append(f"| {system} | " + " | ".join(vals) + f" | {v['mean']:.2f} |")
    lines += [
        "",
        "| system | cases | right | accepted | precision | calls | tokens in | tokens out | "
        "model s | wall s | tokens per right answer |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for system, v in s.items():
        prec = f"{v['precision']:.2f}" if v["precision"] is not None else "–"
        tpr = f"{v['tokens_per_right']:,.0f}" if v["tokens_per_right"] else "– (none right)"
        lines.append(
            f"| {system} | {v['cases']} | {v['right']} | {v['accepted']} | {prec} | {v['calls']} | "
            f"{v['input_tokens']:,} | {v['output_tokens']:,} | {v['model_seconds']:.0f} | "
            f"{v['wall_seconds']:.0f} | {tpr} |"
        )
    cites = {k: v for k, v in s.items() if "right_under_cite" in v}
    if cites:
        lines += [
            "",
            "| system (--cite) | right answers | with a verified citation | share | accepted citations not "
            "in the context |",
            "|---|---|---|---|---|",
        ]
        for system, v in cites.items():
            n, k = v["right_under_cite"], v["right_with_citation"]
            share = f"{k / n:.0%}" if n else "–"
            lines.append(f"| {system} | {n} | {k} | {share} | {v['false_citations']} |")
    return "\n".join(lines)


def figure(rows: list[dict], path: Path) -> Path:
    """Mean score against context length (every family, the protocol's cases at their own lengths), one line
    per system; the systems' points are spread a little sideways so equal scores stay visible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    by: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by[r["system"]][r["length"]].append(r["score"])
    for k, (system, points) in enumerate(sorted(by.items())):
        xs = sorted(points)
        n = sum(len(v) for v in points.values())
        ax.plot(
            [x * (1 + 0.025 * (k - 1.5)) for x in xs],
            [sum(points[x]) / len(points[x]) for x in xs],
            marker="o",
            label=f"{system} ({n} cases)",
        )
    ax.set_xscale("log")
    lengths = sorted({r["length"] for r in rows})
    ax.set_xticks(lengths, [_length_label(n) for n in lengths], rotation=45)
    ax.minorticks_off()
    ax.set_ylim(-0.04, 1.04)
    ax.set_xlabel("context length (chars)")
    ax.set_ylabel("mean score")
    ax.set_title("Long-context accuracy by system (same model and server)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="results JSON files (rows are merged)")
    parser.add_argument("--figure", help="write the accuracy figure here (PNG)")
    args = parser.parse_args(argv)
    rows = [r for f in args.results for r in json.loads(Path(f).read_text())["rows"]]
    print(table(rows))
    if args.figure:
        print(f"\nfigure: {figure(rows, Path(args.figure))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
