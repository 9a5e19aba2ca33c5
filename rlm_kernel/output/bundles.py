"""The MIME policy of a display bundle: which representations leave the kernel, cleaned how, with which
metadata.

A bundle made by cell code (a person's cell, model-written code, an object either made and a later cell
shows) keeps only representations the frontends render inertly — text, JSON, raster images, sanitised
HTML/SVG/LaTeX — and Markdown becomes sanitised HTML. Everything else (`application/javascript`,
`text/javascript`, widget views, Vega/Plotly/Bokeh JSON, PDF, any unknown type a frontend extension might
render actively) is dropped; a bundle left with nothing to show says what was removed. The kernel's own
displays (`trust.mark`) keep their representations and metadata; their HTML still has MathJax's active
commands neutralised (it embeds model-written text).
"""

from __future__ import annotations

import base64
import html as html_text
import math
import re
from collections.abc import Callable
from typing import Any

from rlm_kernel.output.sanitise import (
    clean_html,
    clean_svg,
    markdown_html,
    neutralise_tex,
    neutralise_tex_html,
    no_math,
)
from rlm_kernel.output.trust import take_mark

__all__ = ["INERT_TYPES", "MODEL_LABEL", "clean_bundle", "clean_payload_data", "label_model_output"]

_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*\Z")
_RASTER = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _image(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value)  # ipykernel base64-encodes raw bytes
    if isinstance(value, str) and _BASE64.match(value):
        return value
    return None


def _html(value: Any) -> str | None:
    return clean_html(value) if isinstance(value, str) else None


def _svg(value: Any) -> str | None:
    return clean_svg(value) if isinstance(value, str) else None


def _latex(value: Any) -> str | None:
    return neutralise_tex(value) if isinstance(value, str) else None


def _json(value: Any) -> Any:
    return value  # shown as a collapsible tree of text by every frontend; never rendered as markup


# representation -> cleaner (None from a cleaner drops the representation)
_CLEANERS: dict[str, Callable[[Any], Any]] = {
    "text/plain": _text,
    "text/html": _html,
    "text/latex": _latex,
    "image/svg+xml": _svg,
    "application/json": _json,
    **dict.fromkeys(_RASTER, _image),
}
INERT_TYPES = frozenset(_CLEANERS) | {"text/markdown"}

# metadata a cell's bundle may carry, per representation: image size and background hints, JSON expansion
_IMAGE_META = {
    "width": (int, float),
    "height": (int, float),
    "needs_background": (str,),
    "unconfined": (bool,),
}
_META_KEYS: dict[str, dict[str, tuple[type, ...]]] = {
    **dict.fromkeys((*_RASTER, "image/svg+xml"), _IMAGE_META),
    "application/json": {"expanded": (bool,), "root": (str,)},
}


def _finite(value: Any) -> bool:
    """A hint that JSON can carry: `NaN`/`Infinity` are not JSON (the message fails to serialise)."""
    return type(value) is not float or math.isfinite(value)


def _clean_metadata(metadata: Any, kept: dict[str, Any]) -> dict[str, Any]:
    """The per-representation hints above, for representations kept; nothing else (no `isolated`, no
    forged `rlm` provenance, no frontend-specific switches)."""
    out: dict[str, Any] = {}
    if not isinstance(metadata, dict):
        return out
    for mime, allowed in _META_KEYS.items():
        entry = metadata.get(mime)
        if mime in kept and isinstance(entry, dict):
            hints = {k: v for k, v in entry.items() if k in allowed and type(v) in allowed[k] and _finite(v)}
            if hints:
                out[mime] = hints
    return out


def clean_bundle(data: Any, metadata: Any = None) -> tuple[dict[str, Any], Any]:
    """(data, metadata) of a display bundle as it may leave the kernel.

    Bundles marked as the kernel's own (`trust.mark`) keep their representations (TeX neutralised in their
    HTML); any other is cut to `INERT_TYPES`, cleaned, its metadata to the known hints.
    """
    trusted, metadata = take_mark(metadata)
    if not isinstance(data, dict):
        return {"text/plain": "[display data that is not a MIME bundle was removed by the rlm kernel]"}, {}
    if not data:
        return {}, {}  # an empty placeholder (display(display_id=True)) stays empty
    if trusted:
        html = data.get("text/html")
        if isinstance(html, str) and "\\" in html:
            data = {**data, "text/html": neutralise_tex_html(html)}
        # its metadata is cut like any other: `display(rlm_result, metadata=...)` merges a cell's keys in
        return data, _clean_metadata(metadata, data)
    if len(data) == 1 and type(data.get("text/plain")) is str and not metadata:
        return data, {}  # the common case: plain text, nothing to clean
    out: dict[str, Any] = {}
    removed: list[str] = []
    for mime, value in data.items():
        if mime == "text/markdown":
            if isinstance(value, str):
                out.setdefault("text/html", markdown_html(value))
                if "text/plain" not in data:
                    out["text/plain"] = value
            continue
        cleaner = _CLEANERS.get(mime) if isinstance(mime, str) else None
        if cleaner is None:
            removed.append(str(mime)[:80])
            continue
        cleaned = cleaner(value)
        if cleaned is None:
            removed.append(str(mime)[:80])
        elif mime == "text/html":
            out["text/html"] = cleaned  # an HTML representation wins over one made from Markdown
        else:
            out[mime] = cleaned
    if "text/plain" not in out and (removed or not out):
        what = ", ".join(sorted(set(removed))[:5]) or "empty output"
        out["text/plain"] = (
            f"[output removed by the rlm kernel: {what} — cell code may show text, images, JSON and "
            "sanitised HTML/SVG/Markdown/LaTeX, never script or other active content]"
        )
    return out, _clean_metadata(metadata, out)


def clean_payload_data(payload: Any) -> Any:
    """An execute_reply payload (the pager: `obj?`) with its `data` bundle cleaned like a display."""
    if isinstance(payload, dict) and isinstance(payload.get("data"), dict):
        data, _ = clean_bundle(payload["data"])
        return {**payload, "data": data}
    return payload


MODEL_LABEL = "shown by model-written code — not the rlm kernel's own display"
_LABELLED = (
    "<div style='border-left:3px dashed #b26a00;padding-left:8px;margin:2px 0'>"
    "<div style='font-size:0.8em;color:#b26a00'>&#9650; " + html_text.escape(MODEL_LABEL) + "</div>{}</div>"
)


def label_model_output(data: dict[str, Any]) -> dict[str, Any]:
    """A cleaned bundle that model-written code made, labelled as such where a frontend renders it richly.

    Cleaning keeps pictures: an SVG with a green `<rect>` or a PNG of a "FINAL ANSWER" box looks exactly like
    the kernel's own answer box. So model code's rich output is shown as HTML (which every frontend prefers
    to images) inside a frame with a caption that only the kernel can draw (cell output can have no style):
    the picture is an inline `<img>`, the HTML the cleaned HTML. Plain text and JSON are not pictures and stay
    as they are. Its math is not typeset at all (`no_math`): it shows the TeX as written."""
    inner: str | None = None
    if isinstance(data.get("text/html"), str):
        inner = data["text/html"]
    elif isinstance(data.get("image/svg+xml"), str):
        svg = base64.b64encode(data["image/svg+xml"].encode("utf-8")).decode("ascii")
        inner = f"<img src='data:image/svg+xml;base64,{svg}'>"  # in an <img>, an SVG runs nothing
    else:
        for mime in _RASTER:
            value = data.get(mime)
            if isinstance(value, bytes):
                value = base64.b64encode(value).decode("ascii")
            if isinstance(value, str):
                inner = f"<img src='data:{mime};base64,{''.join(value.split())}'>"
                break
        else:
            if isinstance(data.get("text/latex"), str):
                inner = f"<div>{html_text.escape(data['text/latex'])}</div>"
    if inner is None:
        return data
    # model code's math is not typeset: shown as its source (no_math), and no text/latex for a frontend to
    # typeset instead of the frame (issue 26, class 1: TeX that defines or assembles commands)
    kept = {mime: value for mime, value in data.items() if mime != "text/latex"}
    return {**kept, "text/html": _LABELLED.format(no_math(inner))}
