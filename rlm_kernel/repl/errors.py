"""Errors raised by the REPL helpers: text only, safe to hand to sandboxed code.

Every helper catches what the layers below raise and re-raises one of these `from None`.
"""

from __future__ import annotations

from rlm_kernel.errors import RLMError
from rlm_kernel.llm.errors import BatchError

__all__ = ["ContextError", "QueryBatchError", "QueryError", "ReplError"]


class ReplError(RLMError):
    """Base of the REPL helpers' errors; carries a message string only."""


class ContextError(ReplError):
    """`load_context` refused or failed: the message names the path, the rule and what to do."""


class QueryError(ReplError):
    """A model call made by `llm_query`/`rlm_query` failed; the message says why."""


class QueryBatchError(ReplError, BatchError):
    """Some items of `llm_query_batched`/`rlm_query_batched` failed; the others are kept.

    The LLM layer's `BatchError` under the name cells catch, with text results: `results` is the list in input
    order with `None` where an item failed; `errors` maps each failed index to its error text, in input order.
    Catch it to keep the successes: `except QueryBatchError as e: done = e.results`.
    """

    def __init__(self, message: str, results: list[str | None], errors: dict[int, str]) -> None:
        super().__init__(message, results=results, errors=errors)

    @classmethod
    def of(cls, results: list[str | None], errors: dict[int, str], noun: str) -> QueryBatchError:
        """The error a batch helper raises when items `errors` of `results` (texts, None where failed) failed:
        the one message, naming how many of how many `noun` failed and the first reason."""
        first = min(errors)
        return cls(
            f"{len(errors)} of {len(results)} {noun} failed (item {first}: {errors[first]}); "
            f"e.results has the {len(results) - len(errors)} answers (None where failed), "
            "e.errors the reasons",
            results,
            errors,
        )
