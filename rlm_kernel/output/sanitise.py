"""Inert HTML, SVG, Markdown and LaTeX: the sanitisers a cell's display bundle goes through.

HTML and SVG are cleaned by nh3 (the Rust `ammonia` sanitiser: a real HTML5 parser, an allowlist of tags and
attributes, URL schemes checked after parsing). What survives is structure and text — tables, lists,
headings, code, images from `data:` URLs, links to http(s)/mailto — never script, event handlers,
`javascript:` URLs, frames, forms, `<style>`, `style`/`class`/`id` attributes (so nothing can look like the
kernel's own displays), remote images (no tracking or exfiltration through the browser), relative URLs (the
Jupyter server's own API), `<meta>`/`<base>`/`<link>`. Markdown is rendered to HTML here (markdown-it-py,
CommonMark) and that HTML is cleaned: Markdown may carry raw HTML and `javascript:` links, which JupyterLab
renders unsanitised for a live kernel's output. Math stays math, but the TeX commands through which MathJax
makes links, styles, classes, coloured boxes or loads extensions are neutralised (`neutralise_tex`).
"""

from __future__ import annotations

import html
import re

import nh3
from markdown_it import MarkdownIt

__all__ = ["clean_html", "clean_svg", "markdown_html", "neutralise_tex"]

# No `<wbr>`: MathJax reads math across it (its `includeHtmlTags`: `<br>`, `<wbr>` and comments), so
# `\<wbr>fcolorbox{...}` was typeset as `\fcolorbox` while `neutralise_tex` saw no command; removed, the
# backslash and the name meet again in the cleaned text and are neutralised there. (Comments are stripped.)
_HTML_TAGS = frozenset(
    "a abbr b bdi blockquote br caption cite code col colgroup dd del details dfn div dl dt em figcaption "
    "figure h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q rp rt ruby s samp small span strong sub "
    "summary sup table tbody td tfoot th thead time tr u ul var".split()
)
# Removed with everything inside them (the rest of the disallowed tags lose the tag and keep their text).
_DROP_WITH_CONTENT = frozenset(
    "script style template noscript iframe frame frameset object embed applet textarea select option "
    "svg math head title xmp noembed noframes".split()
)
_HTML_ATTRIBUTES = {
    "*": {"title", "lang"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"},
    "col": {"span"},
    "colgroup": {"span"},
    "ol": {"start"},
    "details": {"open"},
    "time": {"datetime"},
}
_DATA_IMAGE = re.compile(r"\s*data:image/(?:png|jpeg|gif|webp|bmp);base64,[A-Za-z0-9+/=\s]*\Z", re.IGNORECASE)
_LINK = re.compile(r"\s*(?:https?://|mailto:)", re.IGNORECASE)


def _html_attribute(tag: str, attribute: str, value: str) -> str | None:
    """Images only from inline data (no request leaves the browser); links only to http(s) and mailto."""
    if attribute == "src":
        return value if _DATA_IMAGE.match(value) else None
    if attribute == "href":
        return value if _LINK.match(value) else None
    return value


_HTML = nh3.Cleaner(
    tags=set(_HTML_TAGS),
    clean_content_tags=set(_DROP_WITH_CONTENT),
    attributes={k: set(v) for k, v in _HTML_ATTRIBUTES.items()},
    attribute_filter=_html_attribute,
    url_schemes={"http", "https", "mailto", "data"},
    url_relative="deny",
    link_rel="noopener noreferrer nofollow",
    strip_comments=True,
)

_SVG_TAGS = frozenset(
    "svg g defs path rect circle ellipse line polyline polygon text tspan clipPath linearGradient "
    "radialGradient stop title desc symbol use marker pattern mask".split()
)
_SVG_ATTRIBUTES = frozenset(
    "id transform fill fill-opacity fill-rule stroke stroke-width stroke-opacity stroke-linecap "
    "stroke-linejoin stroke-dasharray stroke-dashoffset stroke-miterlimit opacity clip-path clip-rule "
    "clipPathUnits mask style x y x1 y1 x2 y2 cx cy r rx ry fx fy width height d points viewBox "
    "preserveAspectRatio font-family font-size font-weight font-style text-anchor dominant-baseline "
    "dx dy offset stop-color stop-opacity gradientUnits gradientTransform patternUnits "
    "patternTransform markerWidth markerHeight refX refY orient markerUnits version href xlink:href "
    "xmlns xmlns:xlink".split()
)
_SVG_STYLE = frozenset(
    "fill fill-opacity fill-rule stroke stroke-width stroke-opacity stroke-linecap stroke-linejoin "
    "stroke-dasharray stroke-dashoffset stroke-miterlimit opacity font-family font-size font-weight "
    "font-style text-anchor dominant-baseline stop-color stop-opacity clip-path clip-rule".split()
)
_URL_REF = re.compile(r"url\s*\(", re.IGNORECASE)
_LOCAL_URL_REF = re.compile(r"url\s*\(\s*['\"]?#", re.IGNORECASE)


def _svg_attribute(tag: str, attribute: str, value: str) -> str | None:
    """References only inside the drawing (`#id`, `url(#id)`): no external resource, no script URL."""
    if attribute in ("href", "xlink:href"):
        return value if value.strip().startswith("#") else None
    if _URL_REF.search(value) and len(_URL_REF.findall(value)) != len(_LOCAL_URL_REF.findall(value)):
        return None
    return value


_SVG = nh3.Cleaner(
    tags=set(_SVG_TAGS),
    clean_content_tags={"script", "style", "foreignObject", "iframe", "object", "embed"},
    attributes={"*": set(_SVG_ATTRIBUTES)},
    attribute_filter=_svg_attribute,
    url_schemes=set(),
    url_relative="pass_through",  # only `#id` survives _svg_attribute
    link_rel=None,
    strip_comments=True,
    filter_style_properties=set(_SVG_STYLE),
    set_tag_attribute_values={"svg": {"xmlns": "http://www.w3.org/2000/svg"}},
)

# MathJax (which JupyterLab runs over Markdown, HTML and LaTeX outputs) turns these into links, inline CSS,
# CSS classes and ids, coloured or framed boxes (colortbl's cell, row and column colours too), tooltips,
# raw MathML/Unicode glyph loading, extension loading and option changes (`\setOptions`). A zero-width
# space after the backslash makes each an undefined command, shown as text.
_TEX_ACTIVE = re.compile(
    r"\\(?=(?:href|url|style|class|cssId|data|attr|bbox|color|textcolor|colorbox|fcolorbox|pagecolor|"
    r"definecolor|boxed|fbox|framebox|enclose|require|unicode|mmlToken|toggle|mathtip|texttip|tooltip|"
    r"html|begingroup|def|let|newcommand|renewcommand|newenvironment|renewenvironment|DeclareMathOperator|"
    r"cellcolor|rowcolor|columncolor|setOptions)(?![A-Za-z]))"
)


def neutralise_tex(text: str) -> str:
    """`text` with MathJax's active commands (`\\href`, `\\style`, `\\class`, `\\fcolorbox`, `\\require`…)
    made inert. Applied to every HTML, Markdown and LaTeX output, the kernel's own included."""
    if "\\" not in text:
        return text
    return _TEX_ACTIVE.sub("\\\\\u200b", text)


def clean_html(source: str) -> str:
    """`source` as inert HTML (see the module docstring for what survives)."""
    return neutralise_tex(_HTML.clean(source))


def clean_svg(source: str) -> str:
    """`source` as an inert SVG drawing: shapes, text, gradients, clip paths; no script, foreignObject,
    event handler, link or external reference."""
    return _SVG.clean(source)


_MD = MarkdownIt("commonmark", {"html": True, "linkify": False}).enable("table").enable("strikethrough")
# Math is kept out of the Markdown parser (as JupyterLab does) so `_` and `*` inside it stay math.
_MATH = re.compile(r"\$\$[\s\S]+?\$\$|\\\[[\s\S]+?\\\]|\\\([\s\S]+?\\\)|(?<![\\$])\$[^$\n]+?\$")


def markdown_html(source: str) -> str:
    """Markdown rendered to inert HTML: raw HTML in it is cleaned like any HTML output; math is kept."""
    spans: list[str] = []

    def hold(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"rlmmath{len(spans) - 1}x"

    held = _MATH.sub(hold, source) if "$" in source or "\\" in source else source
    rendered = _MD.render(held)
    if spans:

        def back(match: re.Match[str]) -> str:
            n = int(match.group(1))
            return html.escape(spans[n], quote=False) if n < len(spans) else ""

        rendered = re.sub(r"rlmmath(\d+)x", back, rendered)
    return clean_html(rendered)
