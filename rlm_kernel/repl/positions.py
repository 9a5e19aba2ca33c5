"""Where an offset, a span or a quote of a loaded context lies: its file, line (from 1, within its own file)
and page, chapter, message, cell or record (from 1)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["FileLayout", "describe", "find_quote", "locate_offset", "locate_span", "normalise"]


@dataclass(frozen=True)
class FileLayout:
    """Where one file's units start in the context (absolute offsets), or how its records map to lines."""

    format: str = "text"
    unit: str = ""
    marks: tuple[tuple[int, int], ...] = ()  # (offset in the context, unit number)
    header_lines: int = 0


def normalise(text: str) -> str:
    """`text` with each run of whitespace as one space and no leading or trailing whitespace."""
    return " ".join(text.split())


def find_quote(context: str, quote: str, start: int = 0) -> tuple[int, int] | None:
    """The first span of `context` (from `start`) that equals `quote` up to whitespace, or None."""
    words = quote.split()
    if not words:
        return None
    exact = context.find(quote, start)
    if exact >= 0:
        return exact, exact + len(quote)
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    m = pattern.search(context, start)
    return (m.start(), m.end()) if m else None


def _file_at(files: Mapping[str, tuple[int, int]], offset: int) -> tuple[str, int, int] | None:
    """The file whose text holds `offset`, or whose `=== path ===` marker line does (then its start)."""
    spans = sorted((s, e, name) for name, (s, e) in files.items())
    starts = [s for s, _, _ in spans]
    i = bisect.bisect_right(starts, offset) - 1
    if i >= 0 and offset <= spans[i][1]:
        s, e, name = spans[i]
        return name, s, e
    if i + 1 < len(spans):  # inside the marker line before the next file
        s, e, name = spans[i + 1]
        return name, s, e
    return None


def locate_offset(
    context: str, files: Mapping[str, tuple[int, int]], layouts: Mapping[str, FileLayout], offset: int
) -> dict[str, object]:
    """`{"path", "line", "offset"}` plus the unit (`"page": 3`, `"record": 12`, …) for `offset`."""
    found = _file_at(files, offset) if files else None
    if found is None:
        name, start = "", 0
    else:
        name, start, _ = found
    where = max(offset, start)
    line = context.count("\n", start, where) + 1
    place: dict[str, object] = {"path": name, "line": line, "offset": offset}
    layout = layouts.get(name)
    if layout is not None and layout.unit:
        if layout.marks:
            offsets = [o for o, _ in layout.marks]
            k = bisect.bisect_right(offsets, where) - 1
            if k >= 0:
                place[layout.unit] = layout.marks[k][1]
        elif line > layout.header_lines:
            place[layout.unit] = line - layout.header_lines
    return place


def locate_span(
    context: str,
    files: Mapping[str, tuple[int, int]],
    layouts: Mapping[str, FileLayout],
    start: int,
    end: int,
) -> dict[str, object]:
    """Where span [start, end) begins, with `end_line` (and the unit it ends in, when it differs)."""
    place = locate_offset(context, files, layouts, start)
    last = locate_offset(context, files, layouts, max(start, end - 1))
    place["end"] = end
    if last["path"] == place["path"]:
        place["end_line"] = last["line"]
    else:  # the span runs on into later files
        place["end_line"], place["end_path"] = place["line"], last["path"]
        place["end_path_line"] = last["line"]
    for key, value in last.items():
        if key not in ("path", "line", "offset", "end_path", "end_path_line") and value != place.get(key):
            place[f"end_{key}"] = value
    return place


def describe(place: Mapping[str, object]) -> str:
    """`report.pdf, page 3, line 12` (lines `12-14` for a span, `pages 2-3` for one across pages)."""
    parts = [str(place.get("path") or "context")]
    for key in ("page", "chapter", "message", "cell", "record"):
        if key in place:
            last = place.get(f"end_{key}")
            parts.append(f"{key}s {place[key]}-{last}" if last is not None else f"{key} {place[key]}")
    line, end_line = place.get("line"), place.get("end_line")
    parts.append(f"line {line}" if not end_line or end_line == line else f"lines {line}-{end_line}")
    if place.get("end_path"):
        parts.append(f"to {place['end_path']}, line {place.get('end_path_line')}")
    return ", ".join(parts)
