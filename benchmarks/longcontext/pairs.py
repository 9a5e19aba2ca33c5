"""Pairs (OOLONG-Pairs-like): every pair of users who both asked for their money back for the same product.

The records are aggregation's customer messages, each from a different user; exactly `REFUNDS` of them are
refund requests (implied by wording, never labelled), spread over the products. Scored by F1 over the pairs.
"""

from __future__ import annotations

import itertools
import random

from benchmarks.longcontext.aggregation import INTENTS, PRODUCTS, TEMPLATES
from benchmarks.longcontext.cases import Case
from benchmarks.longcontext.scoring import pair_f1

__all__ = ["REFUNDS", "make"]

REFUNDS = 12


def make(lengths: list[int], per_length: int, seed: int = 1) -> list[Case]:
    cases = []
    for length in lengths:
        for i in range(per_length):
            rng = random.Random(f"pairs:{seed}:{length}:{i}")
            lines: list[tuple[str, str, str]] = []  # (user, product, text)
            total = 0
            others = [k for k in INTENTS if k != "refund request"]
            while total < length:
                product = rng.choice(PRODUCTS)
                text = rng.choice(TEMPLATES[rng.choice(others)]).format(p=product, n=rng.randint(3, 19))
                lines.append(("", product, text))
                total += len(text) + 40
            for at in rng.sample(range(len(lines)), REFUNDS):
                product = rng.choice(PRODUCTS)
                lines[at] = ("", product, rng.choice(TEMPLATES["refund request"]).format(p=product))
            users = rng.sample(range(1000, 10000), len(lines))
            out, by_product = [], {}
            for n, ((_, product, text), user) in enumerate(zip(lines, users, strict=True), start=1):
                out.append(f"[msg {n:04d}] user {user} on 2026-04-{rng.randint(1, 28):02d}: {text}")
                if text in {t.format(p=product) for t in TEMPLATES["refund request"]}:
                    by_product.setdefault(product, []).append(str(user))
            expected = sorted(
                tuple(sorted(p)) for us in by_product.values() for p in itertools.combinations(us, 2)
            )
            question = (
                "Each line is one customer message from a different user. Find every pair of users who both "
                "asked for their money back for the same product. Answer with all pairs of user numbers, "
                "like (1234, 5678), (2345, 6789)."
            )
            cases.append(
                Case(
                    "pairs",
                    f"{length // 1000}K-{i}",
                    question,
                    "\n".join(out),
                    expected,
                    "pairs",
                    lambda a, e=tuple(expected): pair_f1(a, e),
                    length,
                    meta={"refunds_by_product": {k: len(v) for k, v in sorted(by_product.items())}},
                )
            )
    return cases
