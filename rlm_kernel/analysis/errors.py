"""Errors of the analysis helpers (map_reduce, find_relevant, extract_functions): text and plain data only.

They are raised `from None` so no chained exception can carry a client, request or header into a cell.
"""

from __future__ import annotations

from rlm_kernel.errors import RLMError

__all__ = ["AnalysisError", "AnalysisInputError", "FindRelevantError", "MapReduceError"]


class AnalysisError(RLMError):
    """Base of the analysis helpers' errors; carries a message string (and plain-data attributes) only."""


class AnalysisInputError(AnalysisError, ValueError):
    """An argument was invalid (wrong type, unknown language, n_chunks < 1); the message says what to pass."""


class MapReduceError(AnalysisError):
    """map_reduce could not finish. The finished work stays reachable as plain data:

    `map_results`: list of str or None (one per chunk, None where the map call failed or never ran),
    `errors`: dict chunk index -> error text, `stage`: "map" or "reduce".
    """

    def __init__(
        self, message: str, *, map_results: list[str | None], errors: dict[int, str], stage: str
    ) -> None:
        super().__init__(message)
        self.map_results = list(map_results)
        self.errors = dict(errors)
        self.stage = stage


class FindRelevantError(AnalysisError):
    """LLM scoring in find_relevant failed or was stopped by a budget.

    `keyword_results`: the keyword (BM25) ranking as (chunk, score) tuples, to go on without LLM scores.
    """

    def __init__(self, message: str, *, keyword_results: list[tuple[str, float]]) -> None:
        super().__init__(message)
        self.keyword_results = list(keyword_results)
