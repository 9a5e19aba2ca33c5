"""Reading a root model's reply: the code blocks to run and any FINAL/FINAL_VAR written outside them.

The rule is documented in `extract_blocks` and in the README's RLM REPL section; it never raises.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

__all__ = ["Extracted", "ProseFinal", "extract", "extract_blocks", "find_prose_final", "near_final"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PYTHON_TAGS = ("python", "py", "python3")
# at the start of a line, or after a label ending in a colon ("Final answer: FINAL(42)")
_LEAD = r"^(?:[^\n]*:[ \t]*)?[ \t>*`]*"
_FINAL_VAR = re.compile(_LEAD + r"FINAL_VAR\(\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?\s*\)", re.MULTILINE)
_FINAL_START = re.compile(_LEAD + r"FINAL\(", re.MULTILINE)
_FINAL_ONLY = re.compile(r"^\s*FINAL(?:_VAR)?\(.*\)\s*$", re.DOTALL)


@dataclass(frozen=True)
class ProseFinal:
    """A FINAL written outside code: `kind` is "FINAL" (with the literal `text`) or "FINAL_VAR" (a `name`)."""

    kind: str
    value: str


@dataclass(frozen=True)
class Extracted:
    """What one reply asks for: the code blocks to run in order, the runnable blocks that were not run
    (tag → count), the prose around the code, and a FINAL written outside the run blocks (or None)."""

    blocks: tuple[str, ...]
    ignored: dict[str, int] = field(default_factory=dict)
    prose: str = ""
    final: ProseFinal | None = None

    @property
    def code(self) -> str | None:
        """All the blocks that run, joined (None when there are none): what the trajectory records."""
        return "\n\n".join(self.blocks) if self.blocks else None


def _kind(tag: str) -> str | None:
    tag = tag.lower()
    if tag == "repl":
        return "repl"
    if tag in _PYTHON_TAGS:
        return "python"
    if tag == "":
        return "untagged"
    return None


def _fences(reply: str) -> list[tuple[str | None, str, int, int]]:
    return [(_kind(m.group(1)), m.group(2), m.start(), m.end()) for m in _FENCE.finditer(reply)]


def extract_blocks(reply: str) -> tuple[list[str], dict[str, int]]:
    """Return (blocks to run in order, ignored runnable blocks by kind) for a reply.

    Rule: find every fenced block (an unclosed fence at the end runs to the end of the reply). If there are
    blocks tagged `repl`, every non-empty one of them runs, in order; otherwise every block tagged
    `python`/`py`/`python3`; otherwise every untagged block. Runnable blocks of a losing kind are not run and
    are counted by kind (`{"python": 1}`) so the root can be told. Blocks with any other tag (```text,
    ```output, ```json …) never run and are not counted. Prose around blocks is not run.
    """
    fences = _fences(reply)
    present = [k for k in ("repl", "python", "untagged") if any(f[0] == k and f[1].strip() for f in fences)]
    if not present:
        return [], {}
    winner = present[0]
    blocks = [body.strip("\n") for kind, body, _, _ in fences if kind == winner and body.strip()]
    ignored: dict[str, int] = {}
    for kind, body, _, _ in fences:
        if kind is not None and kind != winner and body.strip():
            ignored[kind] = ignored.get(kind, 0) + 1
    return blocks, ignored


def _outside_run_blocks(reply: str) -> str:
    """The reply without the blocks that run (blocks that do not run, e.g. ```text, stay: a FINAL in them
    is read like prose)."""
    fences = _fences(reply)
    present = [k for k in ("repl", "python", "untagged") if any(f[0] == k and f[1].strip() for f in fences)]
    winner = present[0] if present else None
    out, pos = [], 0
    for kind, body, start, end in fences:
        if kind == winner and winner is not None:
            out.append(reply[pos:start])
            pos = end
        else:  # keep the body of a block that does not run, without its fence lines
            out.append(reply[pos:start] + "\n" + body + "\n")
            pos = end
    out.append(reply[pos:])
    return "\n".join(out)


def _balanced_argument(text: str, start: int) -> str | None:
    """The argument of a call whose `(` is just before `start`: up to the matching `)`.

    A quoted argument (starting with ' or ") ends at its closing quote followed by `)`, so parentheses
    inside the quotes do not count. Otherwise parentheses nest. None when the call is never closed.
    """
    rest = text[start:]
    stripped = rest.lstrip()
    if stripped[:3] in ('"""', "'''"):
        quote = stripped[:3]
    elif stripped[:1] in ("'", '"'):
        quote = stripped[:1]
    else:
        quote = ""
    if quote:
        offset = len(rest) - len(stripped)
        m = re.compile(re.escape(quote) + r"\s*\)").search(rest, offset + len(quote))
        if m:
            return rest[offset + len(quote) : m.start()]
    depth = 1
    for i, ch in enumerate(rest):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return rest[:i]
    return None


def find_prose_final(reply: str) -> ProseFinal | None:
    """A `FINAL(...)` or `FINAL_VAR(name)` at the start of a line outside the blocks that run, else None.

    FINAL_VAR wins if both appear. FINAL's text runs to its matching `)` (nested parentheses count, a
    quoted argument ends at its closing quote, it may span lines); surrounding quotes are removed. A FINAL
    in a block that does not run (```text, or a ```python block beside ```repl blocks) is read like prose.
    """
    prose = _outside_run_blocks(reply)
    m = _FINAL_VAR.search(prose)
    if m:
        return ProseFinal("FINAL_VAR", m.group(1))
    for m in _FINAL_START.finditer(prose):
        text = _balanced_argument(prose, m.end())
        if text is None:
            continue
        text = text.strip()
        for quote in ('"""', "'''", '"', "'"):
            if len(text) >= 2 * len(quote) and text.startswith(quote) and text.endswith(quote):
                text = text[len(quote) : -len(quote)]
                break
        return ProseFinal("FINAL", text.strip())
    return None


_NEAR_FINAL = re.compile(_LEAD + r"(final(?:_?var|_?answer)?)\(", re.MULTILINE | re.IGNORECASE)


def near_final(prose: str) -> str | None:
    """The name of a near-miss FINAL written outside code (`Final(...)`, `final_var(...)`,
    `FINAL_ANSWER(...)`) at the start of a line, or None (a real FINAL/FINAL_VAR is not a near miss)."""
    for m in _NEAR_FINAL.finditer(prose or ""):
        if m.group(1) not in ("FINAL", "FINAL_VAR"):
            return m.group(1)
    return None


def _final_text_block(block: str) -> bool:
    """A block that is only a FINAL(...) written as text, not Python (`FINAL(The answer is 3)`)."""
    if not _FINAL_ONLY.match(block):
        return False
    try:
        ast.parse(block)
    except (SyntaxError, ValueError):
        return True
    return False


def extract(reply: str) -> Extracted:
    """Everything the loop needs from one reply. A run block that is only a FINAL(...) that is not Python
    (`FINAL(The answer is 3)` in a fence) is read as a prose FINAL instead of failing as code."""
    blocks, ignored = extract_blocks(reply)
    final = find_prose_final(reply)
    texts = [b for b in blocks if _final_text_block(b)]
    if texts:
        blocks = [b for b in blocks if b not in texts]
        final = final or find_prose_final(texts[-1])
    return Extracted(tuple(blocks), ignored, _outside_run_blocks(reply).strip(), final)
