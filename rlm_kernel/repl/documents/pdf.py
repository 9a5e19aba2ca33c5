"""PDF: the text of each page (pypdf), one `--- page N ---` section per page."""

from __future__ import annotations

import io

from rlm_kernel.repl.documents.caps import Caps, FileSkipped
from rlm_kernel.repl.documents.extracted import Extracted, TextBuilder
from rlm_kernel.repl.documents.libs import need

__all__ = ["extract_pdf"]


def extract_pdf(data: bytes, caps: Caps) -> Extracted:
    pypdf = need("pypdf", "PDF")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=True)
        count = len(reader.pages)
    except FileSkipped:
        raise
    except Exception as err:  # noqa: BLE001 - any parser failure is a reason to skip the file
        raise FileSkipped(f"not a readable PDF ({type(err).__name__}: {err})") from None
    if count > caps.pages:
        raise FileSkipped(f"{count:,} pages, over the {caps.pages:,} page cap (RLM_CORPUS_MAX_PAGES)")
    out = TextBuilder("page", "pdf")
    for number, page in enumerate(reader.pages, start=1):
        try:
            text = page.extract_text() or ""
        except Exception as err:  # noqa: BLE001
            raise FileSkipped(f"page {number} cannot be read ({type(err).__name__}: {err})") from None
        out.start(number)
        out.add(text.strip("\n") + "\n")
        if out.size > caps.expanded_bytes:
            raise FileSkipped(
                f"over {caps.expanded_mb:g} MB of text by page {number} (RLM_CORPUS_MAX_EXPANDED_MB)"
            )
    if count and not any(len(p.strip()) > 0 for p in out.parts[1::2]):
        raise FileSkipped("no text in any page (a scanned PDF? text recognition is not supported)")
    return out.done()
