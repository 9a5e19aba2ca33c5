"""The report's merging, same-case selection, per-cell table and figure, on hand-made result rows."""

from __future__ import annotations

from benchmarks.longcontext import report


def _row(system: str, case: str, score: float, *, accepted: bool, termination: str, calls: int = 2) -> dict:
    family, rest = case.split("/")
    length = {"32K": 32_000, "128K": 128_000}[rest.split("-")[0]]
    return {
        "system": system,
        "case": case,
        "family": family,
        "length": length,
        "score": score,
        "accepted": accepted,
        "termination": termination,
        "calls": calls,
        "input_tokens": 1000 * calls,
        "output_tokens": 10 * calls,
        "model_seconds": 5.0 * calls,
        "wall_seconds": 6.0 * calls,
    }


OURS = [
    _row("ours", "needle/32K-d10", 1.0, accepted=True, termination="final"),
    _row("ours", "needle/128K-d10", 1.0, accepted=True, termination="final"),
    _row("ours", "pairs/32K-0", 0.5, accepted=False, termination="max_iterations", calls=9),
]
RLMS = [
    _row("rlms", "needle/32K-d10", 0.0, accepted=False, termination="library-error", calls=9),
    _row("rlms", "pairs/32K-0", 0.0, accepted=False, termination="library-error", calls=9),
]


def test_a_later_file_replaces_the_same_system_and_case_in_place() -> None:
    rerun = [_row("ours", "needle/32K-d10", 0.0, accepted=True, termination="final", calls=3)]
    rows = report.merge([OURS, RLMS, rerun])
    assert [(r["system"], r["case"]) for r in rows] == [
        ("ours", "needle/32K-d10"),
        ("ours", "needle/128K-d10"),
        ("ours", "pairs/32K-0"),
        ("rlms", "needle/32K-d10"),
        ("rlms", "pairs/32K-0"),
    ]
    assert rows[0]["score"] == 0.0 and rows[0]["calls"] == 3


def test_common_keeps_the_cases_every_system_ran() -> None:
    rows = report.common(OURS + RLMS, ["ours", "rlms"])
    assert sorted((r["system"], r["case"]) for r in rows) == [
        ("ours", "needle/32K-d10"),
        ("ours", "pairs/32K-0"),
        ("rlms", "needle/32K-d10"),
        ("rlms", "pairs/32K-0"),
    ]


def test_the_cell_table_has_a_row_per_system_family_and_length() -> None:
    lines = report.cell_table(OURS + RLMS).splitlines()
    assert len(lines) == 2 + 5
    needle = [line for line in lines if "| needle | 32K |" in line]
    # ours: 1 case, right, accepted, 2 calls, 2,000/20 tokens, 10 s model, 12 s wall, 2,020 tokens a right one
    assert (
        needle[0]
        == "| ours | needle | 32K | 1 | 1.00 | 1 | 1 | 1.00 | 2 | 2,000 | 20 | 10 | 12 | 2,020 | 1 final |"
    )
    assert needle[1].startswith("| rlms | needle | 32K | 1 | 0.00 | 0 | 0 | – | 9 |")
    assert needle[1].endswith("| – | 1 library-error |")
    assert any(line.endswith("| 1 best effort |") and "| pairs |" in line for line in lines)


def test_the_figure_draws_a_panel_per_family(tmp_path) -> None:
    path = report.figure(OURS + RLMS, tmp_path / "f.png", by_family=True)
    assert path.stat().st_size > 10_000
    assert report.figure(OURS + RLMS, tmp_path / "g.png").stat().st_size > 10_000
