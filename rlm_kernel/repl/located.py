"""`where=True` for the analysis helpers over the loaded `context`: `find_relevant` hits as (chunk, score,
place) and `map_reduce` parts headed by where they come from (file, page, lines)."""

from __future__ import annotations

from collections.abc import Callable

from rlm_kernel.repl import positions
from rlm_kernel.repl.errors import ReplError

__all__ = ["LOCATED", "call"]

LOCATED = frozenset({"find_relevant", "map_reduce"})


def _text_of(loaded: object, content: object, name: str) -> str:
    text = getattr(loaded, "value", None)
    if not isinstance(text, str) or content is not text:
        raise ReplError(
            f"{name}(..., where=True) locates parts of the loaded `context` only: pass `context` itself "
            "(locate(quote) finds any other text of it)"
        )
    return text


def call(name: str, fn: Callable, args: tuple, kwargs: dict, where: object, loaded: object) -> object:
    """`fn(*args, **kwargs)`, with locations added when `where` is True (False: the plain call)."""
    if where is False:
        return fn(*args, **kwargs)
    if where is not True:
        raise ReplError(f"{name}: where must be True or False")
    content = args[0] if args else kwargs.get("content")
    text = _text_of(loaded, content, name)
    files, layouts = loaded.files, loaded.layouts  # type: ignore[attr-defined]

    def place(start: int, end: int) -> dict[str, object]:
        found = positions.locate_span(text, files, layouts, start, end)
        found["where"] = positions.describe(found)
        return found

    if name == "map_reduce":
        return fn(*args, **kwargs, part_label=lambda a, b: f"[from {place(a, b)['where']}]\n")
    hits = fn(*args, **kwargs)
    out = []
    for chunk, score in hits:
        start = text.find(chunk)
        out.append((chunk, score, place(start, start + len(chunk)) if start >= 0 and chunk else {}))
    return out
