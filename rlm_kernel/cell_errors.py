"""How a cell's error is shown under its output cap: chains cut to `MAX_CHAIN` exceptions, messages to the
bytes left of the cell's output allowance (at least a few kilobytes), and the rendered lines likewise."""

from __future__ import annotations

from typing import Any

from rlm_kernel.sandbox.error_text import message
from rlm_kernel.sandbox.errors import CellTimeout

__all__ = [
    "MAX_CHAIN",
    "MAX_MESSAGE",
    "Shown",
    "cut_chain",
    "cut_lines",
    "cut_message",
    "error_budget",
    "error_parts",
    "error_text",
    "stand_in",
]

# Errors: how many chained exceptions a traceback shows, and the longest message rendered as is.
MAX_CHAIN = 30
MAX_MESSAGE = 20_000
_MIN_ERROR_BYTES = 8_192  # an error is shown even when the cell's output allowance is used up


class Shown:
    """What ipykernel's error message gets as the exception value: the (capped) text, nothing else."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def stand_in(name: str, text: str) -> BaseException:
    """An exception named like the cell's, carrying only the text shown (for the execute_reply)."""
    kind = type(name, (Exception,), {"__str__": lambda self: text, "__module__": "builtins"})
    return kind()


def error_budget(session: Any) -> int:
    """Bytes an error may still send in this cell (0: no cap)."""
    cap = session.limits.output_bytes if session is not None else 0
    if not cap:
        return 0
    return max(cap - session.output_used, min(cap, _MIN_ERROR_BYTES))


def error_parts(exc: BaseException, budget: int) -> tuple[str, str]:
    """The name and text (`error_text`) of a cell's exception; ('CellTimeout', its text) when the cell's time
    limit stops the rendering of the message (a C repr of a tuple nested with sharing). Never raises."""
    try:
        return type(exc).__name__, error_text(exc, budget)
    except CellTimeout as stopped:
        return "CellTimeout", str(stopped)


def error_text(exc: Any, budget: int) -> str:
    """str(exc) (computed where the cell's time limit stops it: CellTimeout propagates), cut to `budget`
    bytes (and MAX_MESSAGE characters) with a note."""
    try:
        text = message(exc)
    except CellTimeout:
        raise
    except BaseException:  # noqa: BLE001 - an unprintable message (KeyboardInterrupt inside its __str__)
        text = f"<unprintable {type(exc).__name__} message>"
    return cut_message(text, budget)


def cut_message(text: str, budget: int) -> str:
    """`text` cut to `budget` bytes (and MAX_MESSAGE characters) with a note."""
    limit = min(budget, MAX_MESSAGE) if budget else MAX_MESSAGE * 50
    if len(text) > limit:
        text = text[:limit] + f"… [message truncated: {len(text)} characters]"
    return text


def cut_lines(lines: list[str], budget: int) -> list[str]:
    """Keep lines until `budget` bytes are used; the rest is replaced by one note."""
    if not budget:
        return lines
    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        size = len(line.encode("utf-8", "surrogatepass"))
        if used + size > budget:
            room = max(budget - used, 0)
            if room:
                kept.append(line.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore"))
            dropped = sum(len(x) for x in lines[index:]) - room
            kept.append(
                f"[error output truncated: about {dropped} more characters over the output limit "
                "per cell (RLM_OUTPUT_BYTES)]"
            )
            return kept
        kept.append(line)
        used += size
    return kept


def cut_chain(value: BaseException, budget: int) -> None:
    """Before rendering: keep the first MAX_CHAIN exceptions of a `raise … from` / context chain (the rest
    is dropped with a note), and cut over-long messages of built-in exception types (their str is args)."""
    seen: set[int] = set()
    exc: BaseException | None = value
    depth = 0
    limit = min(budget, MAX_MESSAGE) if budget else MAX_MESSAGE
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        depth += 1
        if type(exc).__module__ == "builtins" and len(exc.args) == 1 and isinstance(exc.args[0], str):
            message = exc.args[0]
            if len(message) > limit:
                exc.args = (message[:limit] + f"… [message truncated: {len(message)} characters]",)
        following = (
            exc.__cause__
            if exc.__cause__ is not None
            else (None if exc.__suppress_context__ else exc.__context__)
        )
        if depth >= MAX_CHAIN and following is not None:
            rest = 0
            probe: BaseException | None = following
            while probe is not None and rest < 1_000_000 and id(probe) not in seen:
                seen.add(id(probe))
                rest += 1
                probe = probe.__cause__ if probe.__cause__ is not None else probe.__context__
            exc.__cause__ = None
            exc.__context__ = None
            exc.__suppress_context__ = True
            try:
                exc.add_note(f"[{rest} earlier chained exception(s) not shown]")
            except Exception:  # noqa: BLE001 - a note is a courtesy
                pass
            return
        exc = following
