"""Evidence for an accepted answer that has no citations: the spans of `context` the sub-calls were given
whose answers led to it, located (file, page, line) and marked as seen by a sub-call, not quoted as proof.

During a run every sub-call item whose prompt held part of `context` is kept (`Seen`: its prompt and answer,
by reference, no copy): `llm_query`, each item of `llm_query_batched` and of `map_reduce`, `rlm_query`.
When the run ends with an accepted answer and no citation, `for_run` picks the items that led to it by the
FINAL gate's own rule 3: an item leads to the answer when its answer holds the answer's own words
(`gate.content_words`: not stop words, not the question's; numbers included) or the answer itself. Items
are taken greedily, the one covering most of the answer's still uncovered words first (so each hop of a
multi-hop answer brings its own call), at most `MAX_ITEMS`; an item's prompt is searched for the spans of
`context` it holds (`prompt_spans.spans_in`, linear), each cut at the files it runs across; of them, those
holding the words the item gave are kept, at most `MAX_SPANS`. An item holding no span is passed over (a
reduce step, which saw only the parts' answers), and so is one whose spans do not hold the words it gave
(they came from elsewhere in its prompt: a reduce step quoting a part's answer), unless no item does
better (then the best of those, all its spans: a paraphrase of what it saw).

Not chosen by the data flow from the call to the FINAL (`repl.derived` follows names, not which call gave
a value, and a block often joins several calls' answers into one name); not kept for `find_relevant`'s
scoring calls (their answers are scores, not text that leads to an answer).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from rlm_kernel.repl import positions
from rlm_kernel.repl.gate import content_words
from rlm_kernel.repl.prompt_spans import spans_in

__all__ = ["BY", "MAX_ITEMS", "NOTE", "Seen", "for_run", "render_text"]

MAX_ITEMS = 5
MAX_SPANS = 3
MAX_EXAMINED = 12
"""Items whose prompts are searched at most (the best candidates first)."""
EXCERPT_CHARS = 300
BY = "sub-call"
NOTE = "seen by the sub-call, not quoted as proof"
_WORD = re.compile(r"[A-Za-z0-9_][\w.-]*\w|\w")
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3})")
_NONBLANK = re.compile(r"\S")
NOT_EVIDENCE = frozenset({"find_relevant"})


@dataclass
class Seen:
    """The items of one sub-call (`call`, its `ChildCall`) whose prompts held part of `context`: (item number
    from 1, prompt texts, answer)."""

    call: object
    items: list[tuple[int, tuple[str, ...], str]] = field(default_factory=list)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(_DIGIT_COMMA.sub("", text))}


def _pattern(words: set[str]) -> re.Pattern[str] | None:
    """A search for any of `words` as a whole word (case aside), run over a span in place (no copy)."""
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![\w])(?:{alternatives})(?![\w])", re.IGNORECASE)


def _excerpt(text: str, start: int, end: int, words: set[str]) -> str:
    """The line of `text[start:end]` holding most of `words` (the span's first line when none does),
    whitespace-normalised, at most EXCERPT_CHARS."""
    best, best_score = "", -1
    pos = start
    while pos < end:
        stop = text.find("\n", pos, end)
        stop = end if stop < 0 else stop
        line = text[pos:stop]
        score = len(_words(line) & words) if words else 0
        if score > best_score and line.strip():
            best, best_score = line, score
        pos = stop + 1
        if pos - start > 200_000:
            break  # a long span: its first lines are enough to show
    shown = positions.normalise(best)
    return shown if len(shown) <= EXCERPT_CHARS else shown[: EXCERPT_CHARS - 1] + "…"


def _by_file(span: tuple[int, int], bounds: list[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    """`span` cut at the files it runs across (`bounds`: the files' (start, end), sorted; each piece within
    one file's text, the `=== path ===` lines left out), blank pieces dropped: a slice around a fact near a
    file's start also holds the end of the file before, and each piece is located in its own file."""
    start, end = span
    if not bounds:
        return [span]
    pieces = []
    k = max(bisect.bisect_right(bounds, (start, len(text) + 1)) - 1, 0)
    while k < len(bounds) and bounds[k][0] < end:
        lo, hi = bounds[k]
        k += 1
        a, b = max(lo, start), min(hi, end)
        if a < b and _NONBLANK.search(text, a, b):
            pieces.append((a, b))
    return pieces


def _turn_of(turns: list, call: object) -> int | None:
    for turn in turns:
        if any(c is call for c in getattr(turn, "calls", ())):
            return getattr(turn, "index", None)
    return None


def _spans(
    prompts: tuple[str, ...], text: str, bounds: list[tuple[int, int]], question: str
) -> list[tuple[int, int]]:
    """The spans of `text` the prompts hold, each cut at the files it runs across (the question quoted is
    not evidence)."""
    spans = [
        (a, b)
        for p in prompts
        for a, b in spans_in(p, text)
        if b - a > len(question) or text[a:b] not in question
    ]
    return [piece for span in spans for piece in _by_file(span, bounds, text)]


def _record(
    text: str, files: Mapping, layouts: Mapping, span: tuple[int, int], words: set[str], item: tuple
) -> dict[str, object]:
    entry, number, response, turn = item
    start, end = span
    place = positions.locate_span(text, files, layouts, start, end)
    units = ("page", "chapter", "message", "cell", "record", "path")
    return {
        "span": [start, end],
        "path": place["path"],
        "line": place["line"],
        "end_line": place["end_line"],
        **{k: v for k, v in place.items() if k.removeprefix("end_") in units},
        "where": positions.describe(place),
        "excerpt": _excerpt(text, start, end, words),
        "by": BY,
        "call": getattr(entry.call, "kind", "call"),
        "item": number,
        "turn": turn,
        "response": response[:200],
    }


def for_run(
    answer: str, question: str, seen: list[Seen], loaded: object, turns: list | None = None
) -> list[dict[str, object]]:
    """The evidence records for `answer`: dicts with span, path, line, end_line (and page, record, … when
    the file has them), where, excerpt, by="sub-call", call (the helper), item, turn and the item's answer
    (its first 200 characters)."""
    text = getattr(loaded, "value", None)
    if not isinstance(text, str) or not text or not seen or not answer.strip():
        return []
    files: Mapping = getattr(loaded, "files", {}) or {}
    layouts: Mapping = getattr(loaded, "layouts", {}) or {}
    bounds = sorted(files.values())
    words = content_words(answer, question)
    verbatim = positions.normalise(answer).lower()
    candidates: list[tuple[set[str], bool, Seen, int, tuple[str, ...], str]] = []
    for entry in seen:
        if getattr(entry.call, "kind", "") in NOT_EVIDENCE:
            continue
        for number, prompts, response in entry.items:
            has = _words(response) & words
            whole = len(verbatim) >= 2 and verbatim in positions.normalise(response).lower()
            if has or whole:
                candidates.append((has, whole, entry, number, prompts, response))
    chosen: list[tuple[list[tuple[int, int]], set[str], tuple]] = []
    weak: list[tuple[list[tuple[int, int]], set[str], tuple]] = []
    left = set(words)
    examined = 0
    while candidates and len(chosen) < MAX_ITEMS and examined < MAX_EXAMINED:
        best = max(candidates, key=lambda c: (len(c[0] & left), c[1], len(c[0])))
        if not (best[0] & left) and not (best[1] and not chosen):
            break  # nothing left to cover (a verbatim answer counts for the first item only)
        candidates.remove(best)
        examined += 1
        has, _whole, entry, number, prompts, response = best
        spans = _spans(prompts, text, bounds, question)
        if not spans:
            continue  # saw no slice of the context itself (e.g. a reduce step over the parts' answers)
        said = _pattern(has)
        telling = [s for s in spans if said is not None and said.search(text, s[0], s[1])]
        item = (entry, number, response, _turn_of(turns or [], entry.call))
        if not telling:  # its slices do not hold the words it gave: they came from elsewhere in its prompt
            weak.append((spans, has, item))
            continue
        chosen.append((telling, has, item))
        left -= has
    if not chosen:
        chosen = weak[:1]  # a paraphrase of what it saw, the best there is
    return [
        _record(text, files, layouts, span, has or words, item)
        for spans, has, item in chosen
        for span in spans[:MAX_SPANS]
    ]


def render_text(evidence: list[dict]) -> str:
    """One line per record: `[1] report.pdf, page 2, lines 3-9 (llm_query, turn 1): “…excerpt…”`."""
    lines = []
    for i, e in enumerate(evidence, start=1):
        item = f" item {e.get('item')}" if e.get("item") and e.get("item") != 1 else ""
        turn = f", turn {e.get('turn')}" if e.get("turn") is not None else ""
        lines.append(f"[{i}] {e.get('where')} ({e.get('call')}{item}{turn}): \u201c{e.get('excerpt')}\u201d")
    return "\n".join(lines)
