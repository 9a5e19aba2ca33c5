"""DOCX (python-docx: paragraphs, headings as `#` lines, tables as ` | ` rows) and EPUB (its spine's
chapters in reading order, each through the HTML reader, one `--- chapter N ---` section each)."""

from __future__ import annotations

import io
import posixpath

from rlm_kernel.repl.documents.caps import Caps, FileSkipped
from rlm_kernel.repl.documents.extracted import Extracted, TextBuilder
from rlm_kernel.repl.documents.html_text import html_to_text
from rlm_kernel.repl.documents.libs import need
from rlm_kernel.repl.documents.ziputil import open_zip, read_member

__all__ = ["extract_docx", "extract_epub"]


def extract_docx(data: bytes, caps: Caps) -> Extracted:
    open_zip(data, caps, "DOCX")  # the size caps, before python-docx inflates anything
    docx = need("docx", "DOCX")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as err:  # noqa: BLE001 - any parser failure is a reason to skip the file
        raise FileSkipped(f"not a readable DOCX ({type(err).__name__}: {err})") from None
    lines: list[str] = []
    for block in document.iter_inner_content():
        if hasattr(block, "rows"):
            for row in block.rows:
                cells = [c.text.replace("\n", " ").strip() for c in row.cells]
                lines.append(" | ".join(cells))
            continue
        text = block.text.strip()
        if not text:
            continue
        style = (block.style.name if block.style is not None else "") or ""
        if style == "Title":
            lines.append(f"# {text}")
        elif style.startswith("Heading") and style[7:].strip().isdigit():
            lines.append("#" * (int(style[7:]) + 1) + f" {text}")
        else:
            lines.append(text)
    if not lines:
        raise FileSkipped("no text in the DOCX")
    return Extracted("\n".join(lines) + "\n", format="docx")


def _xml(data: bytes):  # noqa: ANN202 - an lxml element
    etree = need("lxml.etree", "EPUB")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        return etree.fromstring(data, parser)
    except etree.Error as err:
        raise FileSkipped(f"not a readable EPUB ({err})") from None


def extract_epub(data: bytes, caps: Caps) -> Extracted:
    zf = open_zip(data, caps, "EPUB")
    container = _xml(read_member(zf, "META-INF/container.xml", "EPUB"))
    rootfile = next(
        (el.get("full-path") for el in container.iter() if str(el.tag).endswith("rootfile")), None
    )
    if not rootfile:
        raise FileSkipped("EPUB without a rootfile in META-INF/container.xml")
    opf = _xml(read_member(zf, rootfile, "EPUB"))
    base = posixpath.dirname(rootfile)
    manifest = {el.get("id"): el.get("href") for el in opf.iter() if str(el.tag).endswith("}item")}
    spine = [el.get("idref") for el in opf.iter() if str(el.tag).endswith("}itemref")]
    if len(spine) > caps.pages:
        raise FileSkipped(f"{len(spine):,} chapters, over the {caps.pages:,} cap (RLM_CORPUS_MAX_PAGES)")
    out = TextBuilder("chapter", "epub")
    number = 0
    for idref in spine:
        href = manifest.get(idref)
        if not href:
            continue
        text = html_to_text(read_member(zf, posixpath.normpath(posixpath.join(base, href)), "EPUB"))
        if not text.strip():
            continue
        number += 1
        out.start(number)
        out.add(text + "\n")
    if not number:
        raise FileSkipped("no text in the EPUB's chapters")
    return out.done()
