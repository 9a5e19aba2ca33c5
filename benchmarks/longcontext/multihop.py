"""Multi-hop over documents (BrowseComp-Plus-like): a chain of two or three facts in different files.

A corpus of meeting notes (files of standard-library prose) holds, each in another file: who works on which
project, which office hosts which project, and which badge colour each office uses. The question follows the
chain from a person (2 hops: the office; 3 hops: the badge colour). Distractors: other people, projects and
offices with the same sentence shapes, and a near-namesake of the person on another project.
"""

from __future__ import annotations

import random

from benchmarks.longcontext.cases import Case, join_corpus
from benchmarks.longcontext.scoring import score_token
from benchmarks.longcontext.text import haystack

__all__ = ["make"]

FIRST = [
    "Marta",
    "Ines",
    "Tomas",
    "Oskar",
    "Leila",
    "Ravi",
    "Greta",
    "Yusuf",
    "Anika",
    "Pavel",
    "Noor",
    "Emil",
]
LAST = ["Quist", "Brandt", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Varga", "Celik", "Holm", "Ferreira"]
PROJECTS = [
    "Heron",
    "Basalt",
    "Lantern",
    "Meridian",
    "Quillon",
    "Saffron",
    "Tundra",
    "Vireo",
    "Zephyr",
    "Osprey",
]
OFFICES = ["Lisbon", "Tampere", "Porto", "Ghent", "Bergen", "Leipzig", "Turku", "Utrecht", "Graz", "Aarhus"]
COLOURS = ["teal", "amber", "crimson", "olive", "violet", "ochre", "indigo", "coral", "slate", "jade"]


def _score(answer: str, expected: str, rivals: tuple[str, ...]) -> float:
    return score_token(answer.lower(), expected.lower(), [r.lower() for r in rivals])


def make(lengths: list[int], per_length: int, seed: int = 1) -> list[Case]:
    cases = []
    for length in lengths:
        for i in range(per_length):
            rng = random.Random(f"multihop:{seed}:{length}:{i}")
            hops = 2 + i % 2
            people = rng.sample([f"{f} {la}" for f in FIRST for la in LAST], 8)
            projects = rng.sample(PROJECTS, 6)
            offices = rng.sample(OFFICES, 5)
            colours = rng.sample(COLOURS, 5)
            works = {p: rng.choice(projects) for p in people}
            hosts = {pr: rng.choice(offices) for pr in projects}
            badge = dict(zip(offices, colours, strict=True))
            person = people[0]
            namesake = f"{person.split()[0]} {rng.choice([la for la in LAST if la != person.split()[1]])}"
            if namesake not in works:
                works[namesake] = rng.choice([p for p in projects if p != works[person]])
            facts = [f"{p} has joined the {pr} project team." for p, pr in works.items()]
            facts += [f"The {pr} project is run from the {o} office." for pr, o in hosts.items()]
            facts += [f"Visitors to the {o} office wear {c} badges." for o, c in badge.items()]
            rng.shuffle(facts)
            n_files = max(len(facts) + 4, length // 6000)
            paras = haystack(rng, length - sum(len(f) + 2 for f in facts) - n_files * 40)
            files: dict[str, list[str]] = {f"notes/meeting-{k + 1:03d}.md": [] for k in range(n_files)}
            names = list(files)
            for k, para in enumerate(paras):
                files[names[k * n_files // len(paras)]].append(para)
            for fact, name in zip(facts, rng.sample(names, len(facts)), strict=True):
                body = files[name]
                body.insert(rng.randint(0, len(body)), fact)
            texts = {name: "\n\n".join(body) + "\n" for name, body in files.items()}
            office = hosts[works[person]]
            if hops == 2:
                question = f"From which office is the project that {person} works on run?"
                expected, rivals = office, [o for o in offices if o != office]
            else:
                question = (
                    "What colour are the visitor badges at the office that runs the project "
                    f"{person} works on?"
                )
                expected, rivals = badge[office], [c for c in colours if c != badge[office]]
            context, _ = join_corpus(texts)
            cases.append(
                Case(
                    "multihop",
                    f"{length // 1000}K-{hops}hop-{i}",
                    question,
                    context,
                    expected,
                    "token",
                    lambda a, e=expected, r=tuple(rivals): _score(a, e, r),
                    length,
                    texts,
                    {"person": person, "namesake": namesake, "hops": hops},
                )
            )
    return cases
