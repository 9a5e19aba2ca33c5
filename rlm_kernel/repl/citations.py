"""Citations an answer gives (`FINAL(answer, cite=[...])`, `answer["cite"]`): each checked against the
loaded context — a quote must occur in it (whitespace-normalised), a span must lie inside it — and located
(file, page, line). Unverifiable ones are fed back to the root once with the reason."""

from __future__ import annotations

import html
from collections.abc import Mapping

from rlm_kernel.repl import positions
from rlm_kernel.sandbox.coerce import CoercionError, plain_data

__all__ = ["MISSING", "PROMPT", "CitationCheck", "check", "feedback", "render_html", "render_text"]

MAX_CITATIONS = 50
MAX_QUOTE_CHARS = 2000
PROMPT = (
    "Cite your evidence: end with FINAL(answer, cite=[...]) (or set answer['cite'] = [...] before "
    "answer['ready'] = True), each citation a short exact quote copied from `context` (a str, one to three "
    "sentences) or a (start, end) span of offsets into `context`. The kernel checks every citation against "
    "`context` (whitespace aside) and tells you which do not occur; locate(quote) shows the file, page and "
    "line of a quote."
)


MISSING = (
    "{how}(...) rejected: this run asks for citations (--cite) and the answer gave none. Find the text that "
    "supports it in `context` (print it), then answer again with FINAL(answer, cite=['<an exact quote>']); "
    "this is said once: an answer without citations is accepted next time."
)


class CitationCheck:
    """The outcome of checking an answer's citations: `accepted` (dicts with quote, span and location)
    and `rejected` (one reason per citation that could not be verified)."""

    def __init__(self) -> None:
        self.accepted: list[dict[str, object]] = []
        self.rejected: list[str] = []


def _items(cite: object) -> list[object]:
    try:
        data = plain_data(cite, "cite")
    except CoercionError as err:
        raise ValueError(str(err)) from None
    if isinstance(data, str | dict) or (isinstance(data, tuple | list) and _is_span(data)):
        data = [data]
    if not isinstance(data, list | tuple):
        raise ValueError("cite= takes a list of quotes (str) or (start, end) spans")
    if len(data) > MAX_CITATIONS:
        raise ValueError(f"cite= takes at most {MAX_CITATIONS} citations, got {len(data)}")
    return list(data)


def _is_span(value: object) -> bool:
    return isinstance(value, list | tuple) and len(value) == 2 and all(type(v) is int for v in value)


def check(cite: object, loaded: object) -> CitationCheck:
    """Verify each citation of `cite` against the loaded context `loaded` (a `LoadedContext`)."""
    out = CitationCheck()
    text = getattr(loaded, "value", None)
    files: Mapping = getattr(loaded, "files", {}) or {}
    layouts: Mapping = getattr(loaded, "layouts", {}) or {}
    try:
        items = _items(cite)
    except ValueError as err:
        out.rejected.append(str(err))
        return out
    if not isinstance(text, str):
        out.rejected += [
            f"citation {i}: no text context is loaded to check it against" for i in range(1, len(items) + 1)
        ]
        return out
    for number, item in enumerate(items, start=1):
        quote: str | None = None
        span: tuple[int, int] | None = None
        if isinstance(item, dict):
            if isinstance(item.get("quote"), str):
                item = item["quote"]
            elif _is_span(item.get("span")):
                item = item["span"]
        if isinstance(item, str):
            quote = item
            if not quote.strip():
                out.rejected.append(f"citation {number}: an empty quote")
                continue
            if len(quote) > MAX_QUOTE_CHARS:
                out.rejected.append(
                    f"citation {number}: a quote of {len(quote):,} chars (at most {MAX_QUOTE_CHARS})"
                )
                continue
            span = positions.find_quote(text, quote)
            if span is None:
                shown = positions.normalise(quote)[:80]
                out.rejected.append(f"citation {number}: the quote {shown!r} does not occur in context")
                continue
        elif _is_span(item):
            start, end = item
            if not 0 <= start < end <= len(text):
                out.rejected.append(
                    f"citation {number}: span ({start}, {end}) is not inside context (0 to {len(text)})"
                )
                continue
            span = (start, end)
            quote = text[start:end]
        else:
            out.rejected.append(
                f"citation {number}: {type(item).__name__} is neither a quote (str) nor a (start, end) span"
            )
            continue
        place = positions.locate_span(text, files, layouts, *span)
        out.accepted.append(
            {
                "quote": positions.normalise(text[span[0] : span[1]])[:MAX_QUOTE_CHARS],
                "span": [span[0], span[1]],
                "path": place["path"],
                "line": place["line"],
                "end_line": place["end_line"],
                **{k: v for k, v in place.items() if k in ("page", "chapter", "message", "cell", "record")},
                "where": positions.describe(place),
            }
        )
    return out


def feedback(result: CitationCheck, how: str) -> str:
    """The note fed back to the root (once) for the citations that could not be verified."""
    kept = f" ({len(result.accepted)} verified)" if result.accepted else ""
    return (
        f"{how}(...) rejected: {len(result.rejected)} citation(s) could not be verified{kept}: "
        + "; ".join(result.rejected[:10])
        + ". Quote text exactly as it appears in `context` (find it first, e.g. with find_relevant or "
        "context.find), or drop the citation, and give the answer again; this is said once: a second "
        "answer is accepted with its verified citations only."
    )


FOUND_NOTE = "found by the kernel in what the run's code printed"


def render_text(citations: list[dict]) -> str:
    lines = []
    for i, c in enumerate(citations, start=1):
        by = f" ({FOUND_NOTE})" if c.get("by") == "kernel" else ""
        lines.append(f"[{i}] {c['where']}: \u201c{c['quote']}\u201d{by}")
    return "\n".join(lines)


def render_html(citations: list[dict]) -> str:
    """The citations as an HTML list (every value escaped: quotes and paths come from the corpus)."""
    rows = "".join(
        f"<li><span style='color:#555'>{html.escape(str(c['where']))}</span>: "
        f"<q>{html.escape(str(c['quote']))}</q>"
        + (f" <span style='color:#777'>({FOUND_NOTE})</span>" if c.get("by") == "kernel" else "")
        + "</li>"
        for c in citations
    )
    return f"<div class='rlm-citations'><div style='font-weight:bold'>citations</div><ol>{rows}</ol></div>"
