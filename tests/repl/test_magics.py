"""In-process tests of the `%%rlm` option line and of `%context` / `%%rlm` registration."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from rlm_kernel import magics
from rlm_kernel.repl.cell_magics import parse_rlm_line


def test_registered() -> None:
    assert "context" in magics.allowed_line_magics()
    assert "rlm" in magics.allowed_cell_magics()


def test_parse_every_option() -> None:
    line = (
        "--model powerful --child-model fast --max-iterations 7 --max-depth 3 --budget-usd 0.25 --shared "
        "--max-no-code-turns 2 --output-chars 900"
    )
    assert parse_rlm_line(line) == {
        "model": "powerful",
        "child_model": "fast",
        "max_iterations": 7,
        "max_depth": 3,
        "budget_usd": 0.25,
        "shared": True,
        "max_no_code_turns": 2,
        "output_chars": 900,
    }
    assert parse_rlm_line("") == {}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--max-iterations many", "invalid int value"),
        ("--colour red", "unrecognized arguments"),
        ("--model 'unclosed", "cannot parse"),
    ],
)
def test_bad_lines_are_usage_errors(line: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_rlm_line(line)
