"""Needle in a haystack (S-NIAH): one key sentence at a depth of 10-90 % of standard-library prose."""

from __future__ import annotations

import random

from benchmarks.longcontext.cases import Case
from benchmarks.longcontext.scoring import score_token
from benchmarks.longcontext.text import haystack

__all__ = ["DEPTHS", "make"]

DEPTHS = (0.1, 0.3, 0.5, 0.7, 0.9)
VAULTS = ["Heron", "Juniper", "Cobalt", "Marlow", "Tamsin", "Orchid", "Quarry", "Larch", "Vesper", "Wren"]
WORDS = ["KESTREL", "PLOVER", "FALCON", "OSPREY", "MERLIN", "SISKIN", "TANAGER", "AVOCET"]


def make(lengths: list[int], per_length: int, seed: int = 1) -> list[Case]:
    """`per_length` cases per length, depths cycling through DEPTHS."""
    cases = []
    for length in lengths:
        for i in range(per_length):
            rng = random.Random(f"needle:{seed}:{length}:{i}")
            depth = DEPTHS[i % len(DEPTHS)]
            vault = rng.choice(VAULTS)
            code = f"{rng.randint(1000, 9999)}-{rng.choice(WORDS)}"
            paras = haystack(rng, length)
            needle = f"Note for operators: the access code for the {vault} vault is {code}."
            at, pos = 0, 0
            while at < len(paras) and pos + len(paras[at]) + 2 <= depth * length:
                pos += len(paras[at]) + 2
                at += 1
            paras.insert(at, needle)
            context = "\n\n".join(paras)
            cases.append(
                Case(
                    family="needle",
                    name=f"{length // 1000}K-d{int(depth * 100)}",
                    question=f"What is the access code for the {vault} vault?",
                    context=context,
                    expected=code,
                    kind="token",
                    score=lambda a, c=code: score_token(a, c),
                    length=length,
                    meta={"depth": round(context.index(needle) / len(context), 3)},
                )
            )
    return cases
