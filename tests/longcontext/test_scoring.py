"""The scorers: OOLONG's 0.75^|error| for numbers, exact labels, F1 for pairs, whole-token key facts."""

from __future__ import annotations

import pytest

from benchmarks.longcontext.scoring import (
    first_number,
    pair_f1,
    parse_pairs,
    score_label,
    score_number,
    score_token,
)


def test_numbers() -> None:
    assert score_number("There are 537 lines.", 537) == 1.0
    assert score_number("1,204 of them", 1204) == 1.0
    assert score_number("535", 537) == pytest.approx(0.75**2)
    assert score_number("none found", 3) == 0.0
    assert first_number("msg12 and 3") == 3.0  # a number glued to a word is not the answer
    assert first_number("-4.5 degrees") == -4.5


def test_labels() -> None:
    labels = ("refund request", "praise")
    assert score_label("More are a Refund Request.", "refund request", labels) == 1.0
    assert score_label("praise", "refund request", labels) == 0.0
    assert score_label("refund request or praise", "refund request", labels) == 0.0  # hedging is wrong
    assert score_label("", "praise", labels) == 0.0


def test_tokens() -> None:
    assert score_token("the code is 7034-DELTA.", "7034-DELTA") == 1.0
    assert score_token("17034-DELTAS", "7034-DELTA") == 0.0
    assert score_token("room 3F", "3F") == 1.0 and score_token("room 33F", "3F") == 0.0
    assert score_token("utils.py or header.py", "utils.py", ["header.py"]) == 0.0


def test_pairs() -> None:
    assert parse_pairs("(1, 2), [3,4] and (5 and 6)") == {frozenset("12"), frozenset("34"), frozenset("56")}
    assert pair_f1("(2, 1)", [("1", "2")]) == 1.0
    assert pair_f1("(1, 2), (3, 4)", [("1", "2")]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert pair_f1("nothing", [("1", "2")]) == 0.0
    assert pair_f1("no pairs", []) == 1.0
