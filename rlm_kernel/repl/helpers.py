"""The table of helpers preloaded into every namespace, and how each is bound to its namespace.

Each helper is a module-level function `helper(state, ns, *args)` in the module of its concern —
`repl.queries` (llm_query, llm_query_batched), `repl.recursion` (rlm_query, rlm_query_batched, rlm_run),
`repl.loading` (load_context, load_corpus), `repl.variables` (SHOW_VARS, repl_set, repl_get),
`repl.final` (FINAL, FINAL_VAR) — and translates its errors with `repl.translate.translated`.
`build_helpers` hands a namespace plain closures over its `ReplState`: nothing reachable from them leads to
a module, client or key (their `__signature__` and `__doc__` are the helper's, without `state, ns`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from rlm_kernel.repl import final, loading, locating, queries, recursion, variables
from rlm_kernel.repl.names import HELPER_NAMES
from rlm_kernel.repl.state import ReplState
from rlm_kernel.sandbox.origin import register_trampoline

__all__ = ["HELPERS", "build_helpers"]

HELPERS: dict[str, Callable] = {
    "load_context": loading.load_context,
    "load_corpus": loading.load_corpus,
    "llm_query": queries.llm_query,
    "llm_query_batched": queries.llm_query_batched,
    "rlm_query": recursion.rlm_query,
    "rlm_query_batched": recursion.rlm_query_batched,
    "SHOW_VARS": variables.SHOW_VARS,
    "repl_set": variables.repl_set,
    "repl_get": variables.repl_get,
    "FINAL": final.FINAL,
    "FINAL_VAR": final.FINAL_VAR,
    "rlm_run": recursion.rlm_run,
    "locate": locating.locate,
}
assert tuple(HELPERS) == HELPER_NAMES  # noqa: S101 - one table, checked at import


def _bind(name: str, fn: Callable, state: ReplState, ns: dict) -> Callable:
    """`fn` as a plain closure over `state` and `ns`, named and documented like it (minus those two)."""

    def helper(*args: object, **kwargs: object) -> object:
        return fn(state, ns, *args, **kwargs)

    register_trampoline(helper.__code__)  # the call site of a helper is the frame above this closure
    signature = inspect.signature(fn)
    helper.__name__ = helper.__qualname__ = name
    helper.__doc__ = fn.__doc__
    helper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[2:]
    )
    return helper


def build_helpers(state: ReplState, ns: dict) -> dict[str, Callable]:
    """The helper closures for namespace `ns` (not yet bound into it)."""
    return {name: _bind(name, fn, state, ns) for name, fn in HELPERS.items()}
