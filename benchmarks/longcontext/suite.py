"""The suite: which families exist, their default lengths, and building a deterministic selection of cases."""

from __future__ import annotations

from benchmarks.longcontext import aggregation, codeqa, multihop, needle, pairs, protocol
from benchmarks.longcontext.cases import Case

__all__ = ["FAMILIES", "LENGTHS", "build"]

LENGTHS = {"32K": 32_000, "128K": 128_000, "512K": 512_000, "2M": 2_000_000}
FAMILIES = {
    "needle": needle.make,
    "aggregation": aggregation.make,
    "pairs": pairs.make,
    "code": codeqa.make,
    "multihop": multihop.make,
}
"""Family name -> make(lengths, per_length, seed). `protocol` (the issue's five cases) has no lengths."""


def build(families: list[str], lengths: list[str], per_length: int, seed: int = 1) -> list[Case]:
    """The cases of `families` (and `protocol`) at `lengths` (keys of LENGTHS), `per_length` each."""
    unknown = [f for f in families if f not in FAMILIES and f != "protocol"]
    if unknown:
        raise ValueError(f"unknown families {unknown}: use {', '.join([*FAMILIES, 'protocol'])}")
    bad = [n for n in lengths if n not in LENGTHS]
    if bad:
        raise ValueError(f"unknown lengths {bad}: use {', '.join(LENGTHS)}")
    chars = [LENGTHS[n] for n in lengths]
    cases: list[Case] = []
    for family in families:
        cases += protocol.make() if family == "protocol" else FAMILIES[family](chars, per_length, seed)
    return cases
