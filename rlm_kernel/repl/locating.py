"""The `locate` helper: where an offset, a span or a quote of `context` is (file, page, line)."""

from __future__ import annotations

from rlm_kernel.repl import positions
from rlm_kernel.repl.errors import ReplError
from rlm_kernel.repl.state import ReplState
from rlm_kernel.repl.translate import translated
from rlm_kernel.sandbox.coerce import exact_str

__all__ = ["locate", "locate_in"]


def locate_in(loaded: object, target: object) -> dict[str, object]:
    """`target` (an int offset, a (start, end) span, or a quote) located in the loaded context `loaded`."""
    text = getattr(loaded, "value", None)
    if not isinstance(text, str):
        raise ReplError("locate: no text context is loaded; use load_context(path) first")
    files, layouts = loaded.files, loaded.layouts  # type: ignore[attr-defined]
    kind = type(target)
    if kind is int:
        if not 0 <= target < max(len(text), 1):
            raise ReplError(f"locate: offset {target} is outside the context (0 to {len(text) - 1})")
        place = positions.locate_offset(text, files, layouts, target)
    elif kind in (tuple, list) and len(target) == 2 and all(type(v) is int for v in target):
        start, end = target
        if not 0 <= start < end <= len(text):
            raise ReplError(f"locate: span {start}-{end} is not inside the context (0 to {len(text)})")
        place = positions.locate_span(text, files, layouts, start, end)
    elif issubclass(kind, str):
        quote = exact_str(target, "locate: quote")
        span = positions.find_quote(text, quote)
        if span is None:
            raise ReplError("locate: the quote does not occur in the context (whitespace aside)")
        place = positions.locate_span(text, files, layouts, *span)
    else:
        raise ReplError("locate takes an offset (int), a (start, end) span or a quote (str)")
    place["where"] = positions.describe(place)
    return place


def locate(state: ReplState, ns: dict, target: object) -> dict:
    """Where `target` is in `context`: an offset (int), a (start, end) span, or a quote (str; found
    whitespace-normalised). Returns {"path", "line", "offset", "where": "report.pdf, page 3, line 12", …}
    with "page", "chapter", "message", "cell" or "record" where the file has them (all counted from 1;
    a line within its own file) and, for a span, "end" and "end_line"."""
    with translated(state, "locate", error=ReplError, model_call=False):
        return locate_in(state.protected.get("__loaded_context__"), target)
