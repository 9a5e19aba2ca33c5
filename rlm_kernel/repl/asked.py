"""What a question asks for: the words of its wh-phrase ("Which room's door" -> room, door), and whether a
line of text names that thing at all.

Measured with the coder model (issue 27, protocol/join): the first hop's line ("badge 35415 was issued to
Marta Quist") repeats the question's names but says nothing of the room it asks for; ended with as the
answer, it is wrong. A line that names none of the wh-phrase's words is a step towards the answer, not the
answer. Attribute words ("colour", "name", "number", ...) are not checked: their values ("crimson") rarely
repeat them.

"What is alpha?" and "What does `f` return?" ask about a thing the question names, not for a kind of thing:
a wh-word followed by a verb or auxiliary has no asked phrase ("What is the city ..." keeps one: the
determiner starts a noun phrase). An answer that names no asked word is refused as a step only when it
looks like one (`is_step`): it gives a new number or code right after another thing the question names
("badge 35415"), not an answer's plain value ("Marta lives in Lisbon"). A path ("email/utils.py") names a
file, module or path.
"""

from __future__ import annotations

import re

__all__ = ["asked_words", "counts_characters", "has_number", "is_step", "names_asked_thing", "wants_number"]

_WH = frozenset({"which", "what", "whose"})
_SKIP = frozenset({"the", "a", "an", "of", "kind", "one", "ones"})
_AUXILIARY = frozenset({"is", "are", "was", "were"})
_DETERMINER = frozenset({"the", "a", "an"})
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
    many/much", for attribute phrases and for a wh-word followed by a verb ("What is alpha?", "What
    defines X?"; "What is the city ...?" keeps "city")."""
    if "?" not in question:
        return ()
    words = [w.removesuffix("'s") for w in re.findall(r"[a-z][a-z0-9_'-]*", question.lower())]
    for i, word in enumerate(words):
        if word not in _WH:
            continue
        rest = words[i + 1 :]
        if rest and rest[0] in _AUXILIARY:
            if len(rest) < 2 or rest[1] not in _DETERMINER:
                return ()  # "What is alpha?": about a named thing, no kind of thing asked for
            rest = rest[1:]
        phrase, after = _phrase(rest)
        if phrase and not any(w in _ATTRIBUTE for w in phrase):
            return tuple(phrase)
        if phrase and after:
            # an attribute of a thing: "What colour are the visitor badges ...?", "What is the colour of
            # the door?" ask about the badges, the door (coder model, multihop/32K-3hop-1: the first hop's
            # line "Marta Holm has joined the Heron project team." named no badge and was accepted)
            link = after[0]
            if (link in _AUXILIARY or link == "of") and len(after) > 1 and after[1] in _DETERMINER:
                thing, _ = _phrase(after[1:])
                if thing and not any(w in _ATTRIBUTE for w in thing):
                    return tuple(thing)
        return ()
    return ()


def _phrase(words: list[str]) -> tuple[list[str], list[str]]:
    """The noun phrase at the start of `words` (leading determiners skipped, up to a verb, preposition or
    wh-word, at most four words), and the words after it."""
    phrase: list[str] = []
    for i, w in enumerate(words):
        if not phrase and w in _SKIP:
            continue
        if w in _END or w in _WH:
            return phrase, words[i:]
        phrase.append(w)
        if len(phrase) == 4:
            return phrase, words[i + 1 :]
    return phrase, []


_PATH_KINDS = frozenset({"file", "files", "module", "modules", "path", "paths", "script", "scripts"})
_PATH = re.compile(r"[\w.-]*[/\\][\w./\\-]+|\b[\w-]+\.[a-z][a-z0-9]{0,4}\b")
_VALUE = re.compile(r"[A-Za-z0-9][\w-]*\d[\w-]*|\d[\w-]*")
_DATE_OR_TIME = re.compile(r"^\d{4}-\d\d-\d\d|^\d\d?:\d\d")
_NEAR = 3
"""How many words before a new value a thing the question names makes it that thing's value ("badge
35415", "the badge number is 35415")."""
_STOP = _SKIP | _AUXILIARY | _END | _WH | frozenset({"number", "no", "not", "also", "then", "so"})


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def names_asked_thing(text: str, question: str) -> bool:
    """Whether `text` names one of the question's wh-phrase words (singular or plural); True when the question
    has no such phrase (nothing to check)."""
    asked = asked_words(question)
    if not asked:
        return True
    have = {_stem(w) for w in _WORD.findall(text.lower())}
    if any(_stem(w) in have for w in asked):
        return True
    return any(w in _PATH_KINDS for w in asked) and _PATH.search(text) is not None


_CLAUSE = frozenset(
    "is are was were do does did has have had can could will would should in on at for from to by with that "
    "which who whom whose where when".split()
)


def _wide(question: str) -> set[str]:
    """The words after the wh-word up to its clause's auxiliary or preposition, verbs included ("What is the
    maintenance override code mentioned in the log?" -> maintenance, override, code, mentioned): the asked
    thing's own words, whose value an answer gives ("The code is 4411-DELTA")."""
    words = [w.removesuffix("'s") for w in re.findall(r"[a-z][a-z0-9_'-]*", question.lower())]
    for i, word in enumerate(words):
        if word in _WH:
            span: set[str] = set()
            for w in words[i + 1 :]:
                if w in _CLAUSE and (span or w not in _AUXILIARY):
                    break
                span.add(w)
            return span
    return set()


def is_step(text: str, question: str) -> bool:
    """Whether `text` reads as a step towards the answer, not the answer: it names none of the question's
    wh-phrase words, and either it gives a new number or code (not in the question, not a date or time)
    within a few words after another word the question has ("badge 35415 was issued to Marta Quist" for
    "Which room's door did Marta Quist's badge open?"), or the question asks which file (module, path) and
    it names no path ("def _fold_mime_parameters(part, lines, maxlen):")."""
    if names_asked_thing(text, question):
        return False
    if any(w in _PATH_KINDS for w in asked_words(question)):
        return True  # a file's name has a shape: a text without a path names no file (the `def` line)
    named = {_stem(w) for w in _WORD.findall(question.lower())} - {_stem(w) for w in _STOP | _wide(question)}
    in_question = set(re.findall(r"\w+", question.lower()))
    words = re.findall(r"[\w-]+", text)
    if _names_a_named_thing(words, named, in_question):
        return True
    for i, word in enumerate(words):
        value = word.lower()
        if not _VALUE.fullmatch(word) or value in in_question or len(value) < 3 or _DATE_OR_TIME.match(value):
            continue
        before = {_stem(w.lower()) for w in words[max(0, i - _NEAR) : i]}
        if before & named:
            return True
    return False


def _names_a_named_thing(words: list[str], named: set[str], in_question: set[str]) -> bool:
    """Whether the text gives a new proper name (capitalised, not in the question, not its first word) right
    before or after a thing the question names: "the Heron project", "the Lisbon office" — the name of
    another thing of the question, so a hop of a chain, not what is asked ("Marta lives in Lisbon" names a
    city, not another thing of "Which city does Marta live in?")."""
    for i, word in enumerate(words[1:], start=1):
        if not (word[:1].isupper() and word[1:].islower() and len(word) >= 3) or word.lower() in in_question:
            continue
        near = {_stem(w.lower()) for w in (words[i - 1], words[i + 1] if i + 1 < len(words) else "")}
        if near & named:
            return True
    return False


_HOW_MANY = re.compile(r"\bhow (many|much)\b", re.I)
_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand "
    "million none no once twice".split()
)


def wants_number(question: str) -> bool:
    """Whether the question asks how many or how much (in its first 400 characters: a sub-RLM's question
    quotes its task there)."""
    return _HOW_MANY.search(question[:400]) is not None


_CHARACTERS = re.compile(
    r"\bhow (?:many|much) (?:\w+ ){0,2}(?:characters|chars|letters|bytes)\b|\blength\b", re.I
)


def counts_characters(question: str) -> bool:
    """Whether the question asks for a size in characters ("How many characters ...", "What is the length
    ..."): the one count a text's `len()` answers."""
    return _CHARACTERS.search(question[:400]) is not None


def has_number(text: str) -> bool:
    """Whether a text gives a number: a digit, or a number word ("three", "none", "twice")."""
    return any(c.isdigit() for c in text) or any(w in _NUMBER_WORDS for w in _WORD.findall(text.lower()))
