"""HTML: the main text (lxml), with the title and headings kept as `#` lines and boilerplate (navigation,
headers, footers, scripts, forms) dropped."""

from __future__ import annotations

import re

from rlm_kernel.repl.documents.caps import FileSkipped
from rlm_kernel.repl.documents.extracted import Extracted
from rlm_kernel.repl.documents.libs import need

__all__ = ["html_to_text", "extract_html"]

_DROP = (
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "iframe",
    "svg",
)
_BLOCKS = frozenset(
    "p div section article main li ul ol dl dt dd tr table blockquote pre br hr figure figcaption "
    "h1 h2 h3 h4 h5 h6 title caption address".split()
)
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


def html_to_text(data: bytes | str) -> str:
    """The main text of an HTML document; `FileSkipped` if it cannot be parsed or nests too deeply."""
    etree = need("lxml.etree", "HTML")
    lxml_html = need("lxml.html", "HTML")
    parser = lxml_html.HTMLParser(remove_comments=True, remove_pis=True, no_network=True)
    try:
        root = etree.fromstring(data, parser) if data else None
    except (etree.Error, ValueError) as err:
        raise FileSkipped(f"not readable HTML ({err})") from None
    for entry in parser.error_log:
        if "depth" in entry.message.lower() or "huge" in entry.message.lower():
            raise FileSkipped(f"pathological HTML: {entry.message.strip()} (line {entry.line})")
    if root is None:
        return ""
    title = root.findtext(".//title") or ""
    for name in _DROP:
        for el in root.iter(name):
            if el.getparent() is not None:
                el.drop_tree()
    body = next(iter(root.iter("main")), None)
    if body is None:
        articles = list(root.iter("article"))
        body = max(articles, key=lambda a: len(a.text_content())) if articles else root.find("body")
    body = root if body is None else body
    for el in body.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag in _BLOCKS:
            if len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
                el.text = "\n" + "#" * int(tag[1]) + " " + (el.text or "")
            elif tag == "li":
                el.text = "\n- " + (el.text or "")
            else:
                el.text = "\n" + (el.text or "")
            el.tail = "\n" + (el.tail or "")
        elif tag in ("td", "th"):
            el.text = " | " + (el.text or "")
    lines = [_SPACES.sub(" ", line).strip() for line in body.text_content().split("\n")]
    text = "\n".join(line for line in lines if line)
    title = _SPACES.sub(" ", title).strip()
    if title and not text.startswith(f"# {title}"):
        text = f"# {title}\n{text}"
    return text


def extract_html(data: bytes) -> Extracted:
    text = html_to_text(data)
    if not text.strip():
        raise FileSkipped("no text in the HTML")
    return Extracted(text + "\n", format="html")
