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

import functools
import html
import re
from typing import Any

import nh3

__all__ = ["clean_html", "clean_svg", "markdown_html", "neutralise_tex", "neutralise_tex_html", "no_math"]

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

# MathJax (which JupyterLab runs over Markdown, HTML and LaTeX outputs, with every TeX package loaded) turns
# commands into links, inline CSS, classes and ids, coloured or framed boxes, tooltips, raw MathML, extension
# loading and option changes — and it lets TeX *define* commands (`\newcommand`, `\def`, `\let`,
# `\newenvironment`, mathtools' `\DeclarePairedDelimiter*`, `\newtagform`, extpfeil's `\Newextarrow`, …) and
# *assemble* them from pieces: a paired delimiter's body has `\delimsize` replaced, as text, by the size the
# call gives, so `\DeclarePairedDelimiterX{\p}[1]{.}{.}{\delimsizebox{green}{white}{#1}}` and `\p[\fcolor]`
# typeset `\fcolorbox` though no such name was ever written (issue 26, class 1). A list of the bad names
# cannot keep up with that, so this is an allowlist: a control word is left as MathJax reads it only if it is
# ordinary math — symbols, operators, fonts, fractions, roots, accents, fixed spaces, delimiters — and
# `\begin`/`\end` only for the plain math environments. Every other control word gets a zero-width space after
# its backslash, which makes it an undefined control symbol followed by letters (shown as text). Nothing on
# the list defines, assembles, colours, frames, links, moves or resizes.
_TEX_SAFE = frozenset(
    """
    alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa varkappa lambda mu nu xi
    omicron pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega digamma Gamma Delta Theta
    Lambda Xi Pi Sigma Upsilon Phi Psi Omega varGamma varDelta varTheta varLambda varXi varPi varSigma
    varUpsilon varPhi varPsi varOmega
    aleph beth gimel daleth hbar hslash imath jmath ell wp Re Im partial infty nabla emptyset varnothing
    forall exists nexists neg lnot top bot angle measuredangle triangle backslash prime surd flat natural
    sharp clubsuit diamondsuit heartsuit spadesuit dagger ddagger dots ldots cdots vdots ddots dotsb dotsc
    dotsi dotsm dotso checkmark degree square blacksquare lozenge blacklozenge complement mho eth
    pm mp times div cdot ast star circ bullet oplus ominus otimes oslash odot cap cup sqcap sqcup vee wedge
    setminus smallsetminus wr amalg uplus triangleleft triangleright bigtriangleup bigtriangledown lhd rhd
    unlhd unrhd land lor boxplus boxminus boxtimes boxdot ltimes rtimes intercal dotplus centerdot
    le leq ge geq ne neq equiv sim simeq approx approxeq cong propto subset supset subseteq supseteq
    subsetneq supsetneq in ni notin owns mid nmid parallel nparallel perp models vdash dashv prec succ
    preceq succeq ll gg lll ggg doteq asymp bowtie smile frown lt gt leqslant geqslant lesssim gtrsim ncong
    nleq ngeq nless ngtr nsim nsubseteq nsupseteq coloneqq eqqcolon therefore because
    to gets leftarrow rightarrow Leftarrow Rightarrow leftrightarrow Leftrightarrow mapsto longrightarrow
    longleftarrow Longrightarrow Longleftarrow longleftrightarrow Longleftrightarrow longmapsto uparrow
    downarrow Uparrow Downarrow updownarrow Updownarrow nearrow searrow swarrow nwarrow hookleftarrow
    hookrightarrow implies iff impliedby xrightarrow xleftarrow rightleftharpoons leftrightharpoons
    leftharpoonup rightharpoonup leftharpoondown rightharpoondown twoheadrightarrow rightsquigarrow
    sum prod coprod int iint iiint oint bigcup bigcap bigoplus bigotimes bigodot bigvee bigwedge bigsqcup
    biguplus
    sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh coth log ln lg exp lim liminf limsup sup
    inf max min arg det dim gcd hom ker deg Pr mod bmod pmod pod
    frac dfrac tfrac cfrac binom dbinom tbinom sqrt of over atop choose overline underline overbrace
    underbrace overset underset stackrel hat widehat tilde widetilde bar vec dot ddot dddot acute grave
    check breve mathring overrightarrow overleftarrow overleftrightarrow substack left right middle big Big
    bigg Bigg bigl bigr Bigl Bigr biggl biggr Biggl Biggr limits nolimits displaystyle textstyle
    scriptstyle scriptscriptstyle not tag notag nonumber
    langle rangle lceil rceil lfloor rfloor lvert rvert lVert rVert vert Vert lbrace rbrace lbrack rbrack
    text textrm textbf textit texttt textsf textup textnormal emph mathrm mathbf mathit mathsf mathtt
    mathcal mathbb mathfrak mathscr mathnormal boldsymbol pmb operatorname mathop mathbin mathrel mathord
    mathpunct mathopen mathclose mathinner
    quad qquad enspace thinspace medspace thickspace
    cdotp colon ldotp phantom hphantom vphantom
    """.split()
)
_TEX_ENVIRONMENTS = frozenset(
    "matrix pmatrix bmatrix Bmatrix vmatrix Vmatrix smallmatrix cases rcases dcases aligned gathered split "
    "align align* gather gather* equation equation* multline multline* eqnarray eqnarray*".split()
)
# a control word (ASCII letters only: MathJax reads no other into a name), any other control symbol, and for
# \begin and \end the environment name right after them
_TEX_COMMAND = re.compile(r"\\(?:([A-Za-z]+)(\{[A-Za-z*]+\})?|[\s\S])")


def _tex_command(match: re.Match[str]) -> str:
    name, environment = match.group(1), match.group(2)
    if name is None or name in _TEX_SAFE:
        return match.group(0)
    if name in ("begin", "end") and environment is not None and environment[1:-1] in _TEX_ENVIRONMENTS:
        return match.group(0)
    return "\\\u200b" + match.group(0)[1:]


def neutralise_tex(text: str) -> str:
    """`text` with every TeX control word MathJax would run made inert, except ordinary math (`_TEX_SAFE`):
    no command can link, style, colour, frame, define or assemble another (`\\DeclarePairedDelimiterX`,
    `\\newcommand`, `\\def`, `\\fcolorbox`, `\\require`…). Applied to every HTML, Markdown and LaTeX output,
    the kernel's own included."""
    if "\\" not in text:
        return text
    return _TEX_COMMAND.sub(_tex_command, text)


_TEXT_OR_TAG = re.compile(r"""(<(?:[^>"']|"[^"]*"|'[^']*')*>)""")
# a `<pre>` holding text only (how the kernel shows model code, escaped): nothing in it can end it early
_PRE_TEXT = re.compile(r"(<pre(?:\s[^<>]*)?>[^<]*</pre>)", re.IGNORECASE)
# inside such a `<pre>` (which MathJax does not typeset: its `skipHtmlTags`) only the commands that style,
# link, draw, move, load or define are neutralised, so model code shown there keeps its `\\n`, `\\d`, `\\t`
_TEX_ACTIVE_IN_PRE = re.compile(
    r"\\(?=(?:href|url|style|class|cssId|data|attr|bbox|color|textcolor|colorbox|fcolorbox|pagecolor|"
    r"definecolor|boxed|fbox|framebox|enclose|cancel|bcancel|xcancel|require|unicode|mmlToken|toggle|mathtip|"
    r"texttip|tooltip|html|begingroup|endgroup|global|gdef|edef|xdef|def|let|futurelet|newcommand|"
    r"renewcommand|providecommand|newenvironment|renewenvironment|DeclareMathOperator|DeclarePairedDelimiter|"
    r"DeclarePairedDelimiterX|DeclarePairedDelimiterXPP|delimsize|newtagform|renewtagform|usetagform|"
    r"Newextarrow|csname|cellcolor|rowcolor|columncolor|setOptions|kern|mkern|hskip|mskip|hspace|mspace|"
    r"raise|lower|rlap|llap|clap|mathrlap|mathllap|mathclap|rule|Rule|Space|Huge|huge|LARGE|Large|ce|pu|"
    r"begin|end)(?![A-Za-z]))"
)


def neutralise_tex_html(html_source: str) -> str:
    """`neutralise_tex` over HTML the kernel made (its run view and viewer, which embed model text escaped).
    In a `<pre>` that holds text only — where MathJax never typesets — only the commands that style, link,
    draw, move, load or define are neutralised (`_TEX_ACTIVE_IN_PRE`), so model code shown there keeps its
    `\\n` as written (a zero-width space would break the code when copied); a `<pre>` with any tag inside is
    neutralised like the rest."""
    if "\\" not in html_source:
        return html_source
    parts = _PRE_TEXT.split(html_source)
    return "".join(
        _TEX_ACTIVE_IN_PRE.sub("\\\\\u200b", part) if i % 2 else neutralise_tex(part)
        for i, part in enumerate(parts)
    )


def no_math(html_source: str) -> str:
    """Cleaned HTML in which no frontend finds math to typeset: each `$` and `\\` of its text stands in an
    element of its own. MathJax (and KaTeX's auto-render) look for delimiters within one run of text and
    start a new run at every element, so `$…$`, `\\(…\\)`, `\\[…\\]` and `\\begin{…}` are never found; the
    characters still show as written. For output of model-written code: its math is shown as its source."""
    if "$" not in html_source and "\\" not in html_source:
        return html_source
    parts = _TEXT_OR_TAG.split(html_source)
    for i in range(0, len(parts), 2):  # even items are text between tags (the tags are odd items)
        if "$" in parts[i] or "\\" in parts[i]:
            parts[i] = re.sub(r"[$\\]", lambda m: f"<span>{m.group(0)}</span>", parts[i])
    return "".join(parts)


def clean_html(source: str) -> str:
    """`source` as inert HTML (see the module docstring for what survives)."""
    return neutralise_tex(_HTML.clean(source))


def clean_svg(source: str) -> str:
    """`source` as an inert SVG drawing: shapes, text, gradients, clip paths; no script, foreignObject,
    event handler, link or external reference."""
    return _SVG.clean(source)


@functools.cache
def _markdown() -> Any:
    """The Markdown renderer, made at first use (markdown-it is 45 ms of the kernel's start-up otherwise)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True, "linkify": False}).enable("table").enable("strikethrough")


# Math is kept out of the Markdown parser (as JupyterLab does) so `_` and `*` inside it stay math.
_MATH = re.compile(r"\$\$[\s\S]+?\$\$|\\\[[\s\S]+?\\\]|\\\([\s\S]+?\\\)|(?<![\\$])\$[^$\n]+?\$")


def markdown_html(source: str) -> str:
    """Markdown rendered to inert HTML: raw HTML in it is cleaned like any HTML output; math is kept."""
    spans: list[str] = []

    def hold(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"rlmmath{len(spans) - 1}x"

    held = _MATH.sub(hold, source) if "$" in source or "\\" in source else source
    rendered = _markdown().render(held)
    if spans:

        def back(match: re.Match[str]) -> str:
            n = int(match.group(1))
            return html.escape(spans[n], quote=False) if n < len(spans) else ""

        rendered = re.sub(r"rlmmath(\d+)x", back, rendered)
    return clean_html(rendered)
