"""Aggregation (OOLONG-like): short customer messages whose intent is implied, never named; count and compare.

Each record is `[msg NNNN] user UUU on DATE: TEXT`. The intent of TEXT (one of INTENTS) is only implied by
its wording: no record names its intent. Questions ask how many messages have an intent (scored
0.75^|error|), or which of two intents is more common (scored exact).
"""

from __future__ import annotations

import random

from benchmarks.longcontext.cases import Case
from benchmarks.longcontext.scoring import score_label, score_number

__all__ = ["INTENTS", "TEMPLATES", "make", "records"]

PRODUCTS = ["kettle", "desk lamp", "blender", "headphones", "backpack", "router", "toaster", "office chair"]
TEMPLATES: dict[str, tuple[str, ...]] = {
    "refund request": (
        "I would like my money back for the {p}, it is not what I need.",
        "Please send the payment for the {p} back to my card.",
        "Can you reverse the charge for the {p}? I am returning it.",
        "I want to get reimbursed for the {p} I sent back last week.",
    ),
    "delivery problem": (
        "The {p} still has not arrived and the tracking page has not moved in {n} days.",
        "My {p} was left at the wrong address by the courier.",
        "The box with the {p} showed up crushed and two days late.",
        "It has been {n} days and the {p} is still stuck at the depot.",
    ),
    "praise": (
        "The {p} is wonderful, exactly as described, thank you so much!",
        "Really happy with the {p}, it works better than I hoped.",
        "Great job on the {p}, my whole family loves it.",
        "The {p} is the best thing I bought this year.",
    ),
    "how-to question": (
        "How do I reset the {p} to its factory settings?",
        "Is there a way to change the timer on the {p}?",
        "Where can I find the manual for setting up the {p}?",
        "What is the right way to clean the {p}?",
    ),
}
INTENTS = tuple(TEMPLATES)


def records(rng: random.Random, chars: int, weights: list[float]) -> tuple[list[str], list[str]]:
    """Records totalling about `chars` chars, and each record's intent (the generator's bookkeeping)."""
    lines: list[str] = []
    intents: list[str] = []
    total = 0
    while total < chars:
        intent = rng.choices(INTENTS, weights)[0]
        text = rng.choice(TEMPLATES[intent]).format(p=rng.choice(PRODUCTS), n=rng.randint(3, 19))
        day = rng.randint(1, 28)
        line = f"[msg {len(lines) + 1:04d}] user {rng.randint(100, 999)} on 2026-04-{day:02d}: {text}"
        if total + len(line) + 1 > chars and lines:
            break
        lines.append(line)
        intents.append(intent)
        total += len(line) + 1
    return lines, intents


def make(lengths: list[int], per_length: int, seed: int = 1) -> list[Case]:
    """Per length, cases alternating a count question and a comparison question."""
    cases = []
    for length in lengths:
        for i in range(per_length):
            rng = random.Random(f"aggregation:{seed}:{length}:{i}")
            weights = [rng.uniform(0.5, 2.0) for _ in INTENTS]
            lines, intents = records(rng, length, weights)
            context = "\n".join(lines)
            counts = {k: intents.count(k) for k in INTENTS}
            legend = (
                "Each line is one customer message. Its intent is one of: refund request (asks for money "
                "back), delivery problem, praise, how-to question."
            )
            if i % 2 == 0:
                intent = INTENTS[(i // 2) % len(INTENTS)]
                n = counts[intent]
                question = f"{legend} How many messages are a {intent}? Answer with the number."
                case = Case(
                    "aggregation",
                    f"{length // 1000}K-count-{i}",
                    question,
                    context,
                    n,
                    "number",
                    lambda a, n=n: score_number(a, n),
                    length,
                    meta={"counts": counts, "records": len(lines)},
                )
            else:
                a, b = rng.sample(INTENTS, 2)
                while counts[a] == counts[b]:
                    a, b = rng.sample(INTENTS, 2)
                more = a if counts[a] > counts[b] else b
                question = (
                    f"{legend} Are there more messages that are a {a} or more that are a {b}? "
                    f"Answer with the intent."
                )
                case = Case(
                    "aggregation",
                    f"{length // 1000}K-compare-{i}",
                    question,
                    context,
                    more,
                    "label",
                    lambda ans, m=more, ab=(a, b): score_label(ans, m, ab),
                    length,
                    meta={"counts": counts, "records": len(lines)},
                )
            cases.append(case)
    return cases
