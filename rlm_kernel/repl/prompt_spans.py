"""Which spans of `context` a text holds: the exact slices of the context that model code pasted into a
sub-call's prompt, found without an index in time linear in the prompt and the context.

A prompt is prose the model wrote around pieces it cut from `context` (`context[a:b]`, a chunk, a few
lines). `spans_in` walks the prompt with probes of `PROBE` characters, one every `PROBE` characters, and
looks each up with `str.find` (C, about 2-3 ms for a miss in 10 MB); a probe found is grown to the longest
common run, backwards and forwards, by comparing slices that double in size, and the walk goes on after it.
A slice of the context of `2 * PROBE - 1` characters or more is found (a probe lies wholly inside it) when
it follows another slice or the prompt's start closely; after every `SPARSER` misses in a row the probes
are spread twice as far (up to `MAX_STEP`), so a long stretch of prose costs a few dozen searches, and a
slice after it is found when it is longer than the step reached. At most `MAX_SEARCHES` searches per text.
A probe that occurs several times in the context (a repeated line) is tried at up to `TRIES` of its
places and the longest run kept.
"""

from __future__ import annotations

__all__ = ["MAX_SEARCHES", "MIN_SPAN", "PROBE", "spans_in"]

PROBE = 32
MIN_SPAN = 40
"""A common run shorter than this is a coincidence of wording, not a slice of the context."""
MAX_SEARCHES = 64
"""Searches for one text at most."""
SPARSER = 4
MAX_STEP = 1024
TRIES = 4


def _forward(a: str, i: int, b: str, j: int) -> int:
    """How many characters `a[i:]` and `b[j:]` have in common from their start."""
    limit = min(len(a) - i, len(b) - j)
    k, step = 0, 64
    while k < limit:
        s = min(step, limit - k)
        if a[i + k : i + k + s] == b[j + k : j + k + s]:
            k += s
            step *= 2
        elif s == 1:
            break
        else:
            step = s // 2
    return k


def _backward(a: str, i: int, b: str, j: int) -> int:
    """How many characters `a[:i]` and `b[:j]` have in common at their end."""
    limit = min(i, j)
    k, step = 0, 64
    while k < limit:
        s = min(step, limit - k)
        if a[i - k - s : i - k] == b[j - k - s : j - k]:
            k += s
            step *= 2
        elif s == 1:
            break
        else:
            step = s // 2
    return k


def _dull(probe: str) -> bool:
    """A probe of blanks, dashes or one repeated character: found anywhere, it proves nothing."""
    return len(set(probe)) <= 3


def spans_in(text: str, context: str, min_len: int = MIN_SPAN) -> list[tuple[int, int]]:
    """The spans `(start, end)` of `context` that occur in `text` as runs of at least `min_len` characters,
    in the order `text` holds them, overlapping ones merged."""
    if not text or not context or len(text) < min_len:
        return []
    found: list[tuple[int, int]] = []
    i, searches, misses, n = 0, 0, 0, len(text)
    while i + PROBE <= n and searches < MAX_SEARCHES:
        probe = text[i : i + PROBE]
        step = min(PROBE << (misses // SPARSER), MAX_STEP)
        if _dull(probe):
            i += step
            continue
        searches += 1
        at = context.find(probe)
        best: tuple[int, int, int] | None = None  # (length, start in context, end in text)
        tries = 0
        while at >= 0 and tries < TRIES:
            tries += 1
            back = _backward(text, i, context, at)
            ahead = _forward(text, i + PROBE, context, at + PROBE)
            length = back + PROBE + ahead
            if best is None or length > best[0]:
                best = (length, at - back, i + PROBE + ahead)
            if i + PROBE + ahead >= n or length >= 4 * PROBE:
                break  # the run reaches the text's end, or is long: a better place is unlikely
            searches += 1
            at = context.find(probe, at + 1)
        if best is None:
            misses += 1
            i += step
            continue
        length, start, end_in_text = best
        if length >= min_len:
            found.append((start, start + length))
            misses = 0
        else:
            misses += 1
        i = max(end_in_text, i + 1)
    return _merged(found)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and start <= out[-1][1] and end >= out[-1][0]:
            out[-1] = (min(out[-1][0], start), max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
