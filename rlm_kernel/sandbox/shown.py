"""Values a helper has already shown (SHOW_VARS' listing, FINAL_VAR's answer): returned, not shown twice.

A helper that prints or displays something and also returns it marks the returned object in its session
(`session.shown.mark(value)`); when the same object is then the cell's (or a root block's) last expression,
the display hook and the block runner skip it, and so does `print` given just that object
(`print(SHOW_VARS())` shows the listing once). The mark holds for the cell that made it and is used up once
checked.
"""

from __future__ import annotations

from rlm_kernel.callscope import current_scope

__all__ = ["Shown"]


def _cell() -> str | None:
    return current_scope().owner  # the running cell's msg_id (None outside cells)


class Shown:
    """The last value a helper showed, with the cell that showed it (one per `SandboxSession`)."""

    __slots__ = ("_mark",)

    def __init__(self) -> None:
        self._mark: tuple[object, str | None] | None = None

    def mark(self, value: object) -> object:
        """Remember `value` as shown in the running cell; returns it."""
        self._mark = (value, _cell())
        return value

    def consume(self, value: object) -> bool:
        """Whether `value` is the object last marked in this cell (the mark is then used up)."""
        mark = self._mark
        if mark is None or value is None or mark[0] is not value:
            return False
        same_cell = mark[1] == _cell()
        self._mark = None
        return same_cell
