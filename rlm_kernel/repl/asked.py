"""What a question asks for: the words of its wh-phrase ("Which room's door" -> room, door), and whether a
line of text names that thing at all.

Measured with the coder model (issue 27, protocol/join): the first hop's line ("badge 35415 was issued to
Marta Quist") repeats the question's names but says nothing of the room it asks for; ended with as the
answer, it is wrong. A line that names none of the wh-phrase's words is a step towards the answer, not the
answer. Attribute words ("colour", "name", "number", ...) are not checked: their values ("crimson") rarely
repeat them.
"""

from __future__ import annotations

import re

__all__ = ["asked_words", "names_asked_thing"]

_WH = frozenset({"which", "what", "whose"})
_SKIP = frozenset({"is", "are", "was", "were", "the", "a", "an", "of", "kind", "one", "ones"})
_END = frozenset(
    "is are was were do does did has have had can could will would should in on at for from to by with that "
    "which who whom whose where when mentioned named called listed defined defines define of overrides "
    "override opened opens open runs run works holds contains uses calls returns implements inherits it its "
    "they them this these those and or but give asks".split()
)
_ATTRIBUTE = frozenset(
    "colour color name names number numbers value values amount date time year day month size length count "
    "price cost age id level status type word words text answer percentage ratio share".split()
)
_WORD = re.compile(r"[a-z][a-z0-9_-]*")


def asked_words(question: str) -> tuple[str, ...]:
    """The words of the question's wh-phrase after "which/what/whose" (possessive 's dropped), up to its verb
    or preposition; () for a text that is not a question (no "?"), for a question without one, for "how
    many/much" and for attribute phrases."""
    if "?" not in question:
        return ()
    words = [w.removesuffix("'s") for w in re.findall(r"[a-z][a-z0-9_'-]*", question.lower())]
    for i, word in enumerate(words):
        if word not in _WH:
            continue
        phrase: list[str] = []
        for w in words[i + 1 :]:
            if not phrase and w in _SKIP:
                continue
            if w in _END or w in _WH:
                break
            phrase.append(w)
            if len(phrase) == 4:
                break
        if phrase and not any(w in _ATTRIBUTE for w in phrase):
            return tuple(phrase)
        return ()
    return ()


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def names_asked_thing(text: str, question: str) -> bool:
    """Whether `text` names one of the question's wh-phrase words (singular or plural); True when the question
    has no such phrase (nothing to check)."""
    asked = asked_words(question)
    if not asked:
        return True
    have = {_stem(w) for w in _WORD.findall(text.lower())}
    return any(_stem(w) in have for w in asked)
