"""The names every REPL namespace is given: the preloaded helpers' and the loaded context's."""

from __future__ import annotations

__all__ = ["CONTEXT_NAMES", "HELPER_NAMES"]

HELPER_NAMES = (
    "load_context",
    "load_corpus",
    "llm_query",
    "llm_query_batched",
    "rlm_query",
    "rlm_query_batched",
    "SHOW_VARS",
    "repl_set",
    "repl_get",
    "FINAL",
    "FINAL_VAR",
    "rlm_run",
    "locate",
)
CONTEXT_NAMES = ("context", "ctx", "context_files")
