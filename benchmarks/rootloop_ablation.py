"""The root loop's ablation rows (issue 27 item 4): the same cases before and after a change, from the JSON
results of `benchmarks.longcontext.run`, with the issue's two answer targets.

    python -m benchmarks.rootloop_ablation BEFORE.json AFTER.json [--system ours] [--markdown]

Per case: score, termination, accepted or not, calls and tokens before → after. Then per file:
- *found by code → ended with it*: of the runs where some turn's output contains the expected answer, the
  share whose accepted answer scores 1 (target ≥ 90 %);
- *precision*: right accepted answers ÷ accepted answers (target ≥ 90 %; a best-effort answer is not an
  accepted one).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["main", "summary"]


def _rows(path: Path, system: str) -> dict[str, dict]:
    data = json.loads(path.read_text())
    return {r["case"]: r for r in data.get("rows", []) if r.get("system") == system}


def _found(row: dict) -> bool:
    expected = str(row.get("expected", "")).strip().lower()
    return bool(expected) and any(
        expected in str(t.get("stdout") or "").lower() for t in row.get("turns", [])
    )


def _accepted(row: dict) -> bool:
    return bool(row.get("accepted")) and row.get("termination") == "final"


def summary(rows: dict[str, dict]) -> dict[str, object]:
    """The two answer targets over `rows`: found-by-code → ended with it, and precision of accepted."""
    found = [r for r in rows.values() if _found(r)]
    ended = [r for r in found if _accepted(r) and float(r.get("score") or 0) >= 1.0]
    accepted = [r for r in rows.values() if _accepted(r)]
    right = [r for r in accepted if float(r.get("score") or 0) >= 1.0]
    return {
        "runs": len(rows),
        "found_by_code": len(found),
        "ended_with_it": len(ended),
        "accepted": len(accepted),
        "right_accepted": len(right),
        "mean_score": round(sum(float(r.get("score") or 0) for r in rows.values()) / max(len(rows), 1), 3),
    }


def _cell(row: dict | None) -> str:
    if row is None:
        return "—"
    kind = "accepted" if _accepted(row) else (row.get("answer_kind") or "no answer")
    tokens = f"{row.get('input_tokens', 0):,}/{row.get('output_tokens', 0):,}"
    score = float(row.get("score") or 0)
    return f"{score:.2f} {row.get('termination')} ({kind}), {row.get('calls')} calls, {tokens}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--system", default="ours")
    args = parser.parse_args(argv)
    before, after = _rows(args.before, args.system), _rows(args.after, args.system)
    print("| case | before | after |\n|---|---|---|")
    for case in sorted(set(before) | set(after)):
        print(f"| {case} | {_cell(before.get(case))} | {_cell(after.get(case))} |")
    for label, rows in (("before", before), ("after", after)):
        s = summary(rows)
        print(
            f"\n{label}: {s['runs']} runs, mean score {s['mean_score']}; code output held the answer in "
            f"{s['found_by_code']}, ended with it {s['ended_with_it']}; accepted {s['accepted']}, right "
            f"{s['right_accepted']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
