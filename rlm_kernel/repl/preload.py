"""What every `rlm` namespace starts with, and the repair of helpers a cell rebound or deleted.

Policy: rebinding a preloaded name (llm_query, context, …) works inside a cell and is undone before the next.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable

from rlm_kernel import analysis
from rlm_kernel.analysis.corpus import Corpus
from rlm_kernel.callscope import call_scope
from rlm_kernel.errors import RLMError
from rlm_kernel.llm.session import current_session
from rlm_kernel.repl import located
from rlm_kernel.repl.context import LoadedContext
from rlm_kernel.repl.errors import ContextError, QueryBatchError, QueryError, ReplError
from rlm_kernel.repl.helpers import build_helpers
from rlm_kernel.repl.loading import set_context
from rlm_kernel.repl.state import LibraryCalls, ReplState, RootLoop
from rlm_kernel.sandbox.coerce import CoercionError, exact_str, plain_data

__all__ = ["ANALYSIS_NAMES", "install", "notebook", "populate", "protected", "repair"]

ANALYSIS_NAMES = ("map_reduce", "find_relevant", "extract_functions")
ANALYSIS_ERRORS = ("AnalysisError", "MapReduceError", "FindRelevantError")
ERROR_NAMES = {"QueryError": QueryError, "QueryBatchError": QueryBatchError, "ContextError": ContextError}


class _Namespaces:
    """The namespaces whose preloaded names are repaired after each cell, and the notebook's own: per kernel,
    kept in the kernel's session (`LLMSession.slot`), so a test's session starts with none."""

    def __init__(self) -> None:
        self.registry: dict[int, tuple[dict, ReplState]] = {}
        self.notebook: tuple[dict, ReplState] | None = None


def _namespaces() -> _Namespaces:
    return current_session().slot("repl.namespaces", _Namespaces)


def _calls_a_model(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether this analysis call asked a model (only those count as child calls for the FINAL rule)."""
    if name == "map_reduce":
        return True
    if name == "find_relevant":
        return bool(kwargs.get("use_llm_scoring", args[3] if len(args) > 3 else False))
    return False


def _plain_or_corpus(value: object, what: str) -> object:
    """`plain_data(value)`, except that a `Corpus` (exactly that frozen type, holding plain data only; its
    partitions are looked up kernel-side) passes as it is."""
    return value if type(value) is Corpus else plain_data(value, what)


def _wrap_analysis(name: str, fn: Callable, state: ReplState) -> Callable:
    """A plain closure around an analysis function: text-only errors, and counted as a child call in a run."""

    def helper(*args: object, **kwargs: object) -> object:
        run = state.run
        calls = LibraryCalls()  # the model calls it makes, with their usage (the call scope's run meanwhile)
        started = time.monotonic()
        try:
            # exact built-ins only: these values reach the LLM thread (a subclass's methods would run there)
            args = tuple(_plain_or_corpus(a, f"{name}'s arguments") for a in args)
            kwargs = {
                exact_str(k, f"{name}: keyword"): _plain_or_corpus(v, f"{name}: {k}")
                for k, v in kwargs.items()
            }
            where = kwargs.pop("where", False) if name in located.LOCATED else False
            with call_scope(run=calls) if run is not None else contextlib.nullcontext():
                value = located.call(name, fn, args, kwargs, where, state.protected.get("__loaded_context__"))
        except CoercionError as err:
            raise ReplError(f"{name}: {err}") from None
        except RLMError as err:
            if run is not None:
                calls.first_error = str(err)
                run.add_library_calls(name, "", calls, time.monotonic() - started, ok=False)
            if type(err).__module__.startswith("rlm_kernel.analysis"):
                raise err from None  # text and plain data only (partial results), by that module's contract
            raise QueryError(f"{name} failed: {err}") from None
        except (TypeError, ValueError) as err:
            raise ReplError(f"{name}: {err}") from None
        if run is not None and (calls.items or _calls_a_model(name, args, kwargs)):
            run.add_library_calls(name, "", calls, time.monotonic() - started, ok=True)
        return value

    helper.__name__ = helper.__qualname__ = name
    helper.__doc__ = fn.__doc__
    try:
        helper.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        pass
    return helper


def _analysis_helpers(state: ReplState) -> dict[str, object]:
    """The analysis helpers (wrapped) and their error classes, as far as rlm_kernel.analysis provides them."""
    found: dict[str, object] = {}
    for name in ANALYSIS_NAMES:
        fn = getattr(analysis, name, None)
        if callable(fn):
            found[name] = _wrap_analysis(name, fn, state)
    for name in ANALYSIS_ERRORS:
        cls = getattr(analysis, name, None)
        if isinstance(cls, type) and issubclass(cls, RLMError):
            found[name] = cls
    return found


def populate(ns: dict, state: ReplState, loaded: LoadedContext | None = None) -> None:
    """Bind helpers, error classes, analysis helpers and a context into `ns`; register `ns` for repair."""
    helpers = {**build_helpers(state, ns), **_analysis_helpers(state), **ERROR_NAMES}
    ns.update(helpers)
    state.protected.update(helpers)
    set_context(state, ns, loaded or LoadedContext("", "text", "nothing loaded yet"))
    _namespaces().registry[id(ns)] = (ns, state)


def install(ns: dict, shell: object | None = None, root_loop: RootLoop | None = None) -> None:
    """Put the preloaded helpers into the notebook namespace `ns` (called once by the kernel's shell).

    `root_loop` is what `rlm_query`, `rlm_run` and `%%rlm` start (the shell hands in
    `rootloop.driver.ROOT_LOOP`).
    """
    state = ReplState(
        session=getattr(shell, "sandbox_session", None),
        depth=0,
        interactive=shell is not None,
        hidden=getattr(shell, "user_ns_hidden", set()),
        root_loop=root_loop,
    )
    populate(ns, state)
    _namespaces().notebook = (ns, state)


def notebook() -> tuple[dict, ReplState]:
    """The notebook namespace and its state (for the magics); refuses clearly before `install`."""
    installed = _namespaces().notebook
    if installed is None:
        raise ReplError("the REPL helpers are not installed in this kernel (preload.install was not called)")
    return installed


def track(ns: dict, state: ReplState) -> None:
    """Track a namespace again (a finished run's, continued by a follow-up run)."""
    _namespaces().registry[id(ns)] = (ns, state)


def forget(ns: dict) -> None:
    """Stop tracking a namespace (a finished sub-run's)."""
    _namespaces().registry.pop(id(ns), None)


def protected(ns: dict) -> dict:
    """The preloaded names and values of namespace `ns` (live; {} for a namespace not installed here)."""
    entry = _namespaces().registry.get(id(ns))
    return entry[1].protected if entry is not None and entry[0] is ns else {}


def repair(ns: dict) -> list[str]:
    """Restore preloaded names a cell rebound or deleted; return their names (sorted)."""
    entry = _namespaces().registry.get(id(ns))
    if entry is None or entry[0] is not ns:
        return []
    state = entry[1]
    restored = []
    for name, value in state.protected.items():
        if name.startswith("__"):
            continue
        if name not in ns or ns[name] is not value:
            ns[name] = value
            restored.append(name)
    return sorted(restored)
