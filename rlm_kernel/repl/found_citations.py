"""Citations the kernel finds for an answer the root gave without any (`--cite`): lines the run's code
printed that occur in `context` and hold the answer's own words.

A small model rarely writes `cite=[...]`, but the line its code printed — the needle, the fact of a hop —
is the evidence the answer was drawn from. Each candidate is checked as any citation is
(`citations.check`: it must occur in `context`, whitespace aside) and marked `"by": "kernel"`, so a reader
sees who chose it. None is found for an answer without words of its own (a bare number: one line does not
support a count), or when no printed line holds them.
"""

from __future__ import annotations

import re

from rlm_kernel.repl import citations
from rlm_kernel.repl.gate import FinalGate, content_words

__all__ = ["MAX_FOUND", "for_run", "from_output"]

MAX_FOUND = 3
_MIN_QUOTE = 12
_MAX_CHECKED = 40  # printed lines looked up in the context, newest first
_PIECES = re.compile(r"""['"]\s*,\s*['"]|\t""")  # items of a printed list of lines, tab-separated fields
_OPENERS = re.compile(r"""^(?:\s*(?:\d+\s*[:.)\]]|[\[('"]|line\s+\d+\s*:|-\s|\*\s))+\s*""", re.I)
_CLOSERS = re.compile(r"""[\])'",\s]+$""")
_WORD = re.compile(r"[A-Za-z0-9_][\w.-]*\w|\w")


def _pieces(output: str) -> list[str]:
    """The printed lines (and items of printed lists) as candidate quotes, without line numbers, list
    brackets or repr quotes around them; newest output first, each once."""
    seen: set[str] = set()
    out: list[str] = []
    for line in reversed(output.splitlines()[-5000:]):
        for piece in _PIECES.split(line):
            piece = _CLOSERS.sub("", _OPENERS.sub("", piece)).strip()
            if _MIN_QUOTE <= len(piece) <= citations.MAX_QUOTE_CHARS and piece not in seen:
                seen.add(piece)
                out.append(piece)
    return out


def from_output(answer: str, output: str, question: str, loaded: object) -> list[dict[str, object]]:
    """Up to MAX_FOUND verified citations for `answer`: printed lines (in `output`) found in the loaded
    context, chosen to cover the answer's own words (those not in the question), most words first. A line's
    words include those of the path of the file it is in: for "Which file defines X?", the printed
    `class X:` line backs the answer that names its file."""
    words = content_words(answer, question)
    if not output or not words or all(w.replace(".", "").isdigit() for w in words):
        return []
    asked = content_words(question, "")
    candidates: list[tuple[set[str], dict[str, object]]] = []
    for piece in _pieces(output):
        if len(candidates) >= _MAX_CHECKED:
            break
        said = {w.lower() for w in _WORD.findall(piece)}
        if not said & (words | asked):
            continue
        checked = citations.check(piece, loaded).accepted
        if not checked:
            continue
        path = str(checked[0].get("path") or "")
        has = (said | {w.lower() for w in _WORD.findall(path)}) & words
        if has:
            candidates.append((has, checked[0]))
    chosen: list[dict[str, object]] = []
    left = set(words)
    while candidates and left and len(chosen) < MAX_FOUND:
        best = max(candidates, key=lambda c: (len(c[0] & left), -len(str(c[1]["quote"]))))
        if not best[0] & left:
            break
        candidates.remove(best)
        chosen.append({**best[1], "by": "kernel"})
        left -= best[0]
    return chosen


def for_run(answer: str, gate: FinalGate, loaded: object, printed: str = "") -> list[dict[str, object]]:
    """`from_output` over what a run's code printed: the gate's output of earlier blocks and `printed`, what
    the running block has printed so far (it reaches the gate only when the block ends)."""
    output = gate.output + "\n" + printed if printed else gate.output
    return from_output(answer, output, gate.question, loaded)
