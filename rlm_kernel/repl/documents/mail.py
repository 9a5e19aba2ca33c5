"""Mail: a `.eml` message or a `.mbox` mailbox (stdlib `email`), one `--- message N ---` section each with
its From/To/Cc/Date/Subject headers, the plain-text body (or the HTML body's text) and attachment names."""

from __future__ import annotations

import email
import email.policy
import re

from rlm_kernel.repl.documents.caps import Caps, FileSkipped
from rlm_kernel.repl.documents.extracted import Extracted, TextBuilder
from rlm_kernel.repl.documents.html_text import html_to_text

__all__ = ["extract_eml", "extract_mbox"]

_HEADERS = ("From", "To", "Cc", "Date", "Subject")
_FROM_LINE = re.compile(rb"^From .*\r?\n", re.MULTILINE)


def _message_text(data: bytes) -> str:
    msg = email.message_from_bytes(data, policy=email.policy.default)
    lines = []
    for name in _HEADERS:
        value = msg.get(name)
        if value:
            lines.append(f"{name}: {' '.join(str(value).split())}")
    body = ""
    try:
        part = msg.get_body(preferencelist=("plain", "html"))
        if part is not None:
            content = part.get_content()
            body = html_to_text(content) if part.get_content_type() == "text/html" else str(content)
    except (LookupError, ValueError, AttributeError):
        body = "(the body cannot be decoded)"
    names = [p.get_filename() for p in msg.iter_attachments() if p.get_filename()]
    text = "\n".join(lines) + "\n\n" + body.strip("\n") + "\n"
    if names:
        text += "[attachments: " + ", ".join(names) + "]\n"
    return text


def extract_eml(data: bytes) -> Extracted:
    out = TextBuilder("message", "email")
    out.start(1)
    out.add(_message_text(data))
    return out.done()


def extract_mbox(data: bytes, caps: Caps) -> Extracted:
    """Messages start at lines beginning with `From ` (mboxo/mboxrd, as the stdlib's `mailbox.mbox`);
    `>From ` lines in a body are unquoted once."""
    starts = [m.start() for m in _FROM_LINE.finditer(data)]
    if not starts:
        raise FileSkipped("not a mbox: no line starts with 'From '")
    if len(starts) > caps.members:
        raise FileSkipped(f"{len(starts):,} messages, over the {caps.members:,} cap (RLM_CORPUS_MAX_MEMBERS)")
    out = TextBuilder("message", "mbox")
    for number, (a, b) in enumerate(zip(starts, starts[1:] + [len(data)], strict=True), start=1):
        raw = data[a:b]
        raw = raw[raw.index(b"\n") + 1 :]
        raw = re.sub(rb"^>(>*From )", rb"\1", raw, flags=re.MULTILINE)
        out.start(number)
        out.add(_message_text(raw))
    return out.done()
