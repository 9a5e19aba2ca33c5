"""Cutting long text for prompts and displays: keep the head and the tail, say how much was cut."""

from __future__ import annotations

__all__ = ["truncate"]


def truncate(text: str, limit: int) -> str:
    """Keep the head and the tail of `text` within about `limit` chars, saying how much was cut."""
    if len(text) <= limit:
        return text
    head = int(limit * 0.7)
    tail = limit - head
    return f"{text[:head]}\n… [{len(text) - limit:,} chars cut] …\n{text[-tail:]}"
