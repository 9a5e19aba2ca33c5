"""Reading a root model's reply: the code block to run and any FINAL/FINAL_VAR written in prose.

The rule is documented in `extract_block` and in the README's RLM REPL section; it never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Extracted", "ProseFinal", "extract", "extract_block", "find_prose_final"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_RUNNABLE_TAGS = ("repl", "python", "py", "python3", "")
_FINAL_VAR = re.compile(r"^[ \t>*]*FINAL_VAR\(\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?\s*\)", re.MULTILINE)
_FINAL = re.compile(r"^[ \t>*]*FINAL\((.*)\)", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class ProseFinal:
    """A FINAL written outside code: `kind` is "FINAL" (with the literal `text`) or "FINAL_VAR" (a `name`)."""

    kind: str
    value: str


@dataclass(frozen=True)
class Extracted:
    """What one reply asks for: the code to run (or None), how many other runnable blocks were ignored,
    the prose around the code, and a FINAL written in prose (or None)."""

    code: str | None
    ignored_blocks: int
    prose: str
    final: ProseFinal | None


def extract_block(reply: str) -> tuple[str | None, int]:
    """Return (code, ignored) for a reply.

    Rule: find every fenced block (an unclosed fence at the end runs to the end of the reply). Blocks
    tagged `repl` win; if there are none, blocks tagged `python`/`py`/`python3`; if none, untagged blocks.
    Blocks with any other tag (```text, ```output, ```json …) never run. Of the winning kind the first
    non-empty block runs; the number of the others is returned so the root can be told they were ignored.
    Prose around blocks is ignored.
    """
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(reply)]
    for tag in ("repl", "python"):
        chosen = [
            body for t, body in blocks if (t == tag if tag == "repl" else t in ("python", "py", "python3"))
        ]
        if chosen:
            break
    else:
        chosen = [body for t, body in blocks if t == ""]
    chosen = [c for c in chosen if c.strip()]
    if not chosen:
        return None, 0
    return chosen[0].strip("\n"), len(chosen) - 1


def _outside_code(reply: str) -> str:
    return _FENCE.sub("\n", reply)


def find_prose_final(reply: str) -> ProseFinal | None:
    """A `FINAL(...)` or `FINAL_VAR(name)` at the start of a line outside code blocks, else None.

    FINAL_VAR wins if both appear. FINAL's text runs to the last closing parenthesis (it may span lines);
    surrounding quotes are removed.
    """
    prose = _outside_code(reply)
    m = _FINAL_VAR.search(prose)
    if m:
        return ProseFinal("FINAL_VAR", m.group(1))
    m = _FINAL.search(prose)
    if m:
        text = m.group(1).strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
        return ProseFinal("FINAL", text)
    return None


def extract(reply: str) -> Extracted:
    """Everything the loop needs from one reply."""
    code, ignored = extract_block(reply)
    return Extracted(code, ignored, _outside_code(reply).strip(), find_prose_final(reply))
