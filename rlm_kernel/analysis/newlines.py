"""Offsets after each newline of a text, in plain Python (no numpy: the extractors load it at start-up)."""

from __future__ import annotations

__all__ = ["newline_starts"]


def newline_starts(text: str) -> list[int]:
    """`[0]` and the offset after every `\\n` of `text` (a trailing one included)."""
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return starts
