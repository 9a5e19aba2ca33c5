"""The long-context benchmark's generators: each expected answer re-derived by code other than the generator.

Needles, records and facts are found again in the context text with regular expressions (not from the
generator's bookkeeping); code answers come from importing the module (`inspect`) or from line patterns,
not from the `ast` walk the generator used.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import itertools
import re
from pathlib import Path

import pytest

from benchmarks.longcontext import aggregation, codeqa, multihop, needle, pairs, protocol, suite
from benchmarks.longcontext.text import stdlib_root

LENGTHS = [32_000, 128_000]


@functools.cache
def _template_regexes() -> dict[str, list[re.Pattern[str]]]:
    out: dict[str, list[re.Pattern[str]]] = {}
    for intent, templates in aggregation.TEMPLATES.items():
        for t in templates:
            pattern = re.escape(t).replace(r"\{p\}", "(?P<p>[a-z ]+?)").replace(r"\{n\}", r"\d+")
            out.setdefault(intent, []).append(re.compile(pattern + "$"))
    return out


def _classify(text: str) -> tuple[str, str]:
    """(intent, product) of one message text, found by matching it against the wordings."""
    found = [(i, m.group("p")) for i, rs in _template_regexes().items() for r in rs if (m := r.match(text))]
    assert len(found) == 1, text
    return found[0]


_RECORD = re.compile(r"^\[msg (\d{4})\] user (\d+) on 2026-04-\d\d: (.*)$")


def test_needle_once_at_its_depth() -> None:
    cases = needle.make([32_000], 5) + needle.make([128_000], 1)
    assert len(cases) == 6
    for case in cases:
        found = re.findall(r"access code for the (\w+) vault is (\d{4}-[A-Z]+)\.", case.context)
        assert len(found) == 1
        vault, code = found[0]
        assert code == case.expected and f"the {vault} vault?" in case.question
        assert case.context.count(code) == 1
        depth = case.context.index(code) / len(case.context)
        wanted = needle.DEPTHS[int(case.name.rsplit("d", 1)[1]) // 20]
        assert abs(depth - wanted) < 0.05, (case.id, depth)
        assert abs(len(case.context) - case.length) < 0.03 * case.length
        assert case.score(f"The code is {code}.") == 1.0 and case.score("1234-NOPE") == 0.0


def test_aggregation_counts_and_comparisons_rederived() -> None:
    for case in aggregation.make(LENGTHS, 4):
        intents = []
        for line in case.context.splitlines():
            m = _RECORD.match(line)
            assert m, line
            intents.append(_classify(m.group(3))[0])
        text = "\n".join(_RECORD.match(x).group(3) for x in case.context.splitlines())  # type: ignore[union-attr]
        for label in ("refund", "praise", "complaint", "how-to", "intent"):
            assert label not in text.lower()  # the label is never written in the records
        if case.kind == "number":
            intent = re.search(r"How many messages are a (.+?)\?", case.question).group(1)  # type: ignore[union-attr]
            assert case.expected == intents.count(intent)
            assert case.score(str(case.expected)) == 1.0
            assert case.score(str(case.expected + 2)) == pytest.approx(0.5625)
        else:
            a, b = re.search(
                r"more messages that are a (.+?) or more that are a (.+?)\?", case.question
            ).groups()  # type: ignore[union-attr]
            assert intents.count(a) != intents.count(b)
            assert case.expected == (a if intents.count(a) > intents.count(b) else b)
            assert case.score(f"There are more {case.expected} messages.") == 1.0
            assert case.score(f"{a} and {b}") == 0.0
        assert 200 <= len(intents) <= 2000


def test_pairs_rederived() -> None:
    for case in pairs.make(LENGTHS, 2):
        refunds: dict[str, list[str]] = {}
        users = []
        for line in case.context.splitlines():
            _, user, text = _RECORD.match(line).groups()  # type: ignore[union-attr]
            users.append(user)
            intent, product = _classify(text)
            if intent == "refund request":
                refunds.setdefault(product, []).append(user)
        assert len(set(users)) == len(users)  # one message per user
        assert sum(map(len, refunds.values())) == pairs.REFUNDS
        want = {frozenset(p) for us in refunds.values() for p in itertools.combinations(us, 2)}
        assert want == {frozenset(p) for p in case.expected}  # type: ignore[union-attr]
        assert case.score(", ".join(f"({a}, {b})" for a, b in case.expected)) == 1.0  # type: ignore[union-attr]
        assert case.score("none") == (1.0 if not want else 0.0)


def _module(file: str):  # noqa: ANN202
    return importlib.import_module(file.removesuffix(".py").removesuffix("/__init__").replace("/", "."))


def test_code_answers_rederived_by_import_and_line_patterns() -> None:
    cases = codeqa.make([32_000, 128_000, 512_000], 4)
    assert {c.name.split("-")[1] for c in cases} == set(codeqa.KINDS)
    root = stdlib_root()
    for case in cases:
        assert case.files is not None and sum(map(len, case.files.values())) <= case.length
        for name, text in case.files.items():
            assert (root / name).read_text(encoding="utf-8") == text
        kind = case.name.split("-")[1]
        if kind == "where":
            symbol = case.meta["symbol"]
            hits = [n for n, t in case.files.items() if re.search(rf"^(def|class) {symbol}\b", t, re.M)]
            assert hits == [case.expected]
            assert getattr(_module(case.expected), symbol).__name__ == symbol  # type: ignore[arg-type]
        elif kind == "count":
            text = case.files[case.meta["file"]]  # type: ignore[index]
            assert case.expected == len(re.findall(r"^(?:async )?def \w+", text, re.M))
        elif kind == "override":
            base, method = case.meta["base"], case.meta["method"]
            subclasses = []
            for t in case.files.values():
                for m in re.finditer(r"^class (\w+)\(([^)]*)\):\n((?:[ \t]+.*\n|\n)*)", t, re.M):
                    bases = [b.strip() for b in m.group(2).split(",")]
                    if base in bases and re.search(rf"^    def {method}\(", m.group(3), re.M):
                        subclasses.append(m.group(1))
            assert subclasses == [case.expected]
        else:
            fn = getattr(_module(case.meta["file"]), case.meta["function"])  # type: ignore[arg-type]
            arg = re.search(r"parameter `(\w+)`", case.question).group(1)  # type: ignore[union-attr]
            assert repr(inspect.signature(fn).parameters[arg].default) == case.expected
        assert case.score(str(case.expected)) == 1.0


def test_multihop_chain_rederived_across_files() -> None:
    for case in multihop.make(LENGTHS, 2):
        assert case.files is not None
        where: dict[str, list[str]] = {}
        works, hosts, badge = {}, {}, {}
        for name, text in case.files.items():
            for p, pr in re.findall(r"([A-Z][a-z]+ [A-Z][a-z]+) has joined the (\w+) project team\.", text):
                works[p] = pr
                where.setdefault(p, []).append(name)
            for pr, o in re.findall(r"The (\w+) project is run from the (\w+) office\.", text):
                hosts[pr] = o
                where.setdefault(pr, []).append(name)
            for o, c in re.findall(r"Visitors to the (\w+) office wear (\w+) badges\.", text):
                badge[o] = c
                where.setdefault(o, []).append(name)
        person = re.search(r"project (?:that )?([A-Z][a-z]+ [A-Z][a-z]+) works on", case.question).group(1)  # type: ignore[union-attr]
        office = hosts[works[person]]
        chain = [person, works[person], office]
        want = office if case.meta["hops"] == 2 else badge[office]
        assert want == case.expected
        assert len({where[x][0] for x in chain}) == 3  # each fact of the chain in another file
        namesakes = [p for p in works if p.split()[0] == person.split()[0] and p != person]
        assert namesakes and works[namesakes[0]] != works[person]  # a distractor on another project
        assert case.score(f"It is {want.lower()}.") == 1.0


def test_protocol_is_the_issue_run() -> None:
    find, count, join, where, files = protocol.make()
    (code,) = re.findall(r"maintenance override code is (\S+)", find.context)
    assert code == find.expected and 140_000 < len(find.context) <= 150_000
    assert count.expected == len(re.findall(r"^\S+ \S+ ERROR ", count.context, re.M))
    (badge,) = re.findall(r"badge (\d+) was issued to Marta Quist", join.context)
    assert re.findall(rf"badge {badge} opened the door of room (\w+)", join.context) == [join.expected]
    email = stdlib_root() / "email"
    defs = [p for p in sorted(email.rglob("*.py")) if "def _fold_mime_parameters(" in p.read_text()]
    assert [str(p.relative_to(stdlib_root())) for p in defs] == [where.expected]
    assert files.expected == len([p for p in email.rglob("*.py") if "__pycache__" not in p.parts])
    assert "=== email/_header_value_parser.py ===" in where.context


def test_generators_are_deterministic() -> None:
    a = suite.build([*suite.FAMILIES, "protocol"], ["32K"], 2)
    b = suite.build([*suite.FAMILIES, "protocol"], ["32K"], 2)
    assert [(c.id, c.context, c.expected) for c in a] == [(c.id, c.context, c.expected) for c in b]
    assert len({c.id for c in a}) == len(a)
    c = suite.build(["needle"], ["32K"], 2, seed=2)
    assert [x.context for x in c] != [x.context for x in a if x.family == "needle"]


def test_bad_selection_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown families.*needle"):
        suite.build(["needles"], ["32K"], 1)
    with pytest.raises(ValueError, match="unknown lengths.*128K"):
        suite.build(["needle"], ["100K"], 1)


@pytest.mark.slow
def test_big_lengths_are_built() -> None:
    (n,) = needle.make([2_000_000], 1)
    assert abs(len(n.context) - 2_000_000) < 60_000 and n.context.count(str(n.expected)) == 1
    (code,) = codeqa.make([2_000_000], 1)
    assert len(code.files or {}) > 100 and Path(next(iter(code.files or {}))).parts[0] == "email"
