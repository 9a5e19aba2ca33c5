"""decimal contexts for cells: `decimal.Context` and `localcontext` whose precision stays under a cap.

A context's precision decides how large every Decimal result it computes may get, so the context a cell makes
(or copies from the thread's current one) is a `CappedContext`; the shared module-level contexts are left out.
"""

from __future__ import annotations

import decimal
import operator
from typing import Any

from rlm_kernel.sandbox.errors import LimitExceeded

__all__ = ["CappedContext", "LocalContext", "localcontext"]


def _capped_prec(prec: Any) -> int:
    """`prec` as an exact int within `CappedContext.MAX_PREC` (converted once: no second `__index__`)."""
    value = operator.index(prec)
    if value > CappedContext.MAX_PREC:
        raise LimitExceeded(
            f"decimal precision {value} is over the sandbox's limit of {CappedContext.MAX_PREC}"
        )
    return value


class CappedContext(decimal.Context):
    """decimal.Context with a precision cap (huge precisions run in C and cannot be interrupted: ln() at
    10 000 digits takes seconds, at 100 000 minutes).

    The only context type a cell can hold (`Context()`, `localcontext()`, `.copy()`), so cells may set its
    attributes; `ctx.prec = n` is capped like the constructor's argument (converted once: no second
    `__index__`).
    """

    MAX_PREC = 5_000

    def __init__(self, prec: int | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(None if prec is None else _capped_prec(prec), *args, **kwargs)

    @property  # type: ignore[override]
    def prec(self) -> int:
        return _CONTEXT_PREC.__get__(self)

    @prec.setter
    def prec(self, value: Any) -> None:
        _CONTEXT_PREC.__set__(self, _capped_prec(value))

    def copy(self) -> CappedContext:
        return _capped_copy(self)


_CONTEXT_PREC = decimal.Context.prec
_CONTEXT_FIELDS = ("prec", "rounding", "Emin", "Emax", "capitals", "clamp")


def _capped_copy(ctx: decimal.Context) -> CappedContext:
    """A CappedContext with `ctx`'s settings (its precision brought under the cap), flags and traps."""
    return CappedContext(
        prec=min(ctx.prec, CappedContext.MAX_PREC),
        rounding=ctx.rounding,
        Emin=ctx.Emin,
        Emax=ctx.Emax,
        capitals=ctx.capitals,
        clamp=ctx.clamp,
        flags=[signal for signal, on in ctx.flags.items() if on],
        traps=[signal for signal, on in ctx.traps.items() if on],
    )


class LocalContext:
    """What `decimal.localcontext()` returns in a cell: inside the block the thread's context is a fresh
    `CappedContext` (a copy), the one `as ctx` binds, so `ctx.prec = 50` works and stays capped; the
    previous context is restored on exit. The kernel's own context is never handed out."""

    __slots__ = ("_rlm_new", "_rlm_saved")

    def __init__(self, new: CappedContext) -> None:
        self._rlm_new = new
        self._rlm_saved: decimal.Context | None = None

    def __enter__(self) -> CappedContext:
        self._rlm_saved = decimal.getcontext()
        decimal.setcontext(self._rlm_new)
        return self._rlm_new

    def __exit__(self, *exc: Any) -> None:
        saved, self._rlm_saved = self._rlm_saved, None
        if saved is not None:
            decimal.setcontext(saved)


def localcontext(ctx: decimal.Context | None = None, **kwargs: Any) -> LocalContext:
    """decimal.localcontext for cells (see `LocalContext`)."""
    if ctx is not None and not isinstance(ctx, decimal.Context):
        raise TypeError(f"localcontext() argument must be a decimal.Context, not {type(ctx).__name__}")
    new = _capped_copy(decimal.getcontext() if ctx is None else ctx)
    for name, value in kwargs.items():
        if name not in _CONTEXT_FIELDS and name not in ("flags", "traps"):
            raise TypeError(f"{name!r} is an invalid keyword argument for localcontext()")
        setattr(new, name, value)  # `prec` goes through CappedContext's capped setter
    return LocalContext(new)
