"""The report: per system, accuracy by family and length, calls, tokens, time and tokens per right answer.

    python -m benchmarks.longcontext.report A.json B.json ... [--cells] [--figure PNG [--by-family]]

merges the files' rows (a later file's row for the same system and case replaces an earlier one), prints
Markdown tables (accuracy per family x length, cost per system; `--cells`: one row per system x family x
length with accuracy, accepted precision, calls, tokens, wall time and tokens per right answer, and how the
runs ended) and draws accuracy against context length, one line per system (matplotlib, Agg; `--by-family`:
one panel per family, so a length's point is not a mix of families).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

__all__ = ["cell_table", "common", "figure", "merge", "summary", "table"]

RIGHT = 0.999  # a score at least this counts as a right answer (for cost per right answer and precision)


def _length_label(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{round(n / 1000)}K"


def merge(docs: list[list[dict]]) -> list[dict]:
    """The rows of several results files in order; a later row for the same (system, case) replaces the
    earlier one in its place (a re-run of a case supersedes it)."""
    merged: dict[tuple[str, str], dict] = {}
    for rows in docs:
        for row in rows:
            merged[(row["system"], row["case"])] = row
    return list(merged.values())


def _figures(rs: list[dict]) -> dict:
    right = sum(r["score"] >= RIGHT for r in rs)
    accepted = [r for r in rs if r.get("accepted")]
    tokens = sum(r["input_tokens"] + r["output_tokens"] for r in rs)
    return {
        "cases": len(rs),
        "mean": sum(r["score"] for r in rs) / len(rs),
        "right": right,
        "accepted": len(accepted),
        "precision": (sum(r["score"] >= RIGHT for r in accepted) / len(accepted)) if accepted else None,
        "calls": sum(r["calls"] for r in rs),
        "input_tokens": sum(r["input_tokens"] for r in rs),
        "output_tokens": sum(r["output_tokens"] for r in rs),
        "model_seconds": sum(r["model_seconds"] for r in rs),
        "wall_seconds": sum(r["wall_seconds"] for r in rs),
        "tokens_per_right": (tokens / right) if right else None,
    }


ENDINGS = {"final": "final", "max_iterations": "best effort", "library-error": "library-error"}


def _endings(rs: list[dict]) -> str:
    """How the runs ended, e.g. `2 final, 1 best effort` (a system that returns one reply: `returned`)."""
    counts: dict[str, int] = defaultdict(int)
    for r in rs:
        counts[ENDINGS.get(r.get("termination", ""), r.get("termination", "?"))] += 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def cell_table(rows: list[dict]) -> str:
    """One Markdown row per system x family x length: accuracy (mean score), right, accepted FINALs and
    their precision, calls, tokens in/out, the calls' recorded model seconds, wall seconds (a replayed row's
    is the replay's), tokens per right answer, how the runs ended."""
    cells: dict[tuple[str, str, int], list[dict]] = defaultdict(list)
    for r in rows:
        cells[(r["system"], r["family"], r["length"])].append(r)
    lines = [
        "| system | family | length | cases | accuracy | right | accepted | precision | calls | tokens in | "
        "tokens out | model s | wall s | tokens per right answer | ended |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (system, family, length), rs in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        v = _figures(rs)
        prec = f"{v['precision']:.2f}" if v["precision"] is not None else "–"
        tpr = f"{v['tokens_per_right']:,.0f}" if v["tokens_per_right"] else "–"
        lines.append(
            f"| {system} | {family} | {_length_label(length)} | {v['cases']} | {v['mean']:.2f} | "
            f"{v['right']} | {v['accepted']} | {prec} | {v['calls']} | {v['input_tokens']:,} | "
            f"{v['output_tokens']:,} | {v['model_seconds']:.0f} | {v['wall_seconds']:.0f} | {tpr} | "
            f"{_endings(rs)} |"
        )
    return "\n".join(lines)


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
        out[system] = {
            **_figures(rs),
            "families": {f: sum(v) / len(v) for f, v in fam.items()},
            "cells": {
                f"{f}@{_length_label(n)}": (sum(v) / len(v), len(v)) for (f, n), v in sorted(cell.items())
            },
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


def common(rows: list[dict], systems: list[str]) -> list[dict]:
    """The rows of `systems` on the cases every one of them ran (a side-by-side on the same cases)."""
    ran: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        ran[r["system"]].add(r["case"])
    shared = set.intersection(*(ran[s] for s in systems)) if systems else set()
    return [r for r in rows if r["system"] in systems and r["case"] in shared]


def _lines(ax, rows: list[dict], systems: list[str]) -> None:  # noqa: ANN001
    by: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by[r["system"]][r["length"]].append(r["score"])
    for k, system in enumerate(systems):
        points = by.get(system)
        if not points:
            continue
        xs = sorted(points)
        n = sum(len(v) for v in points.values())
        ax.plot(
            [x * (1 + 0.025 * (k - 1.5)) for x in xs],
            [sum(points[x]) / len(points[x]) for x in xs],
            marker="o",
            color=f"C{k}",
            label=f"{system} ({n})",
        )
    lengths = sorted({r["length"] for r in rows})
    ax.set_xscale("log")
    ax.set_xticks(lengths, [_length_label(n) for n in lengths], rotation=45)
    ax.minorticks_off()
    ax.set_xlim(min(lengths) / 1.6, max(lengths) * 1.6)
    ax.set_ylim(-0.04, 1.04)


def figure(rows: list[dict], path: Path, *, by_family: bool = False, title: str | None = None) -> Path:
    """Mean score against context length, one line per system (every family together, or with
    `by_family` one panel per family); the systems' points are spread a little sideways so equal scores
    stay visible, and each label gives the system's number of cases."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = sorted({r["system"] for r in rows})
    families = sorted({r["family"] for r in rows}) if by_family else [None]
    cols = min(3, len(families))
    nrows = -(-len(families) // cols)
    fig, axes = plt.subplots(
        nrows,
        cols,
        figsize=(4.2 * cols if by_family else 7, 3.4 * nrows if by_family else 4.2),
        squeeze=False,
    )
    for ax, family in zip(axes.flat, families, strict=False):
        _lines(ax, [r for r in rows if family is None or r["family"] == family], systems)
        ax.set_title(family or "every family", fontsize=10)
        ax.set_xlabel("context length (chars)")
        ax.set_ylabel("mean score")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(families) :]:
        ax.set_visible(False)
    fig.suptitle(title or "Long-context accuracy by system (same model and server)", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="results JSON files (rows merged; a later file wins)")
    parser.add_argument("--systems", help="only these systems (comma-separated)")
    parser.add_argument("--common", action="store_true", help="only the cases every selected system ran")
    parser.add_argument("--cells", action="store_true", help="also one row per system x family x length")
    parser.add_argument("--figure", help="write the accuracy figure here (PNG)")
    parser.add_argument("--by-family", action="store_true", help="the figure: one panel per family")
    parser.add_argument("--title", help="the figure's title")
    parser.add_argument("--out", help="write the merged (and selected) rows here as a results JSON file")
    args = parser.parse_args(argv)
    rows = merge([json.loads(Path(f).read_text())["rows"] for f in args.results])
    systems = args.systems.split(",") if args.systems else sorted({r["system"] for r in rows})
    rows = common(rows, systems) if args.common else [r for r in rows if r["system"] in systems]
    print(table(rows))
    if args.cells:
        print()
        print(cell_table(rows))
    if args.out:
        Path(args.out).write_text(
            json.dumps({"merged_from": args.results, "rows": rows}, indent=1, ensure_ascii=False)
        )
        print(f"\nrows: {args.out}")
    if args.figure:
        print(f"\nfigure: {figure(rows, Path(args.figure), by_family=args.by_family, title=args.title)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
