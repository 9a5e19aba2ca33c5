"""How what a helper's callees raise becomes what the cell sees: `translated`, the one context manager.

Every preloaded helper runs its body inside `translated(...)`. Whatever leaves is a text-only `ReplError`
(or a KeyboardInterrupt) raised `from None`, so no chained exception carries a client, request or key into a
cell; with the `errors_in_model_code` setting at `string`, a failed model call made by model-written code
becomes the helper's `"Error: <reason>"` return value instead (the reference library's way). Bad arguments,
an exhausted budget and interrupts raise in both modes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rlm_kernel import llm
from rlm_kernel.errors import RLMError
from rlm_kernel.repl.errors import QueryBatchError, QueryError, ReplError
from rlm_kernel.repl.state import ReplState
from rlm_kernel.sandbox.coerce import CoercionError
from rlm_kernel.sandbox.origin import model_code_running

__all__ = ["Call", "budget_hit", "errors_as_text", "interrupted", "translated"]


@dataclass
class Call:
    """What `translated` hands the helper's body: the body sets `value` (what the helper returns), and
    `on_failure(err)`, when set, records a model call that failed before its error leaves."""

    value: Any = None
    items: int = 0
    """The number of items of a batch helper (a failed batch as text is one "Error: …" per item)."""
    on_failure: Callable[[RLMError], None] | None = None

    def failed(self, err: RLMError) -> None:
        if self.on_failure is not None:
            self.on_failure(err)


def errors_as_text() -> bool:
    """Whether a failed model call returns `"Error: <reason>"` instead of raising: only in model-written code
    (a root-loop or sub-RLM block), and only with the `errors_in_model_code` setting at `string` (the
    reference library's way). The person's cells always raise. Budget exhaustion, interrupts and bad
    arguments raise in both modes (the first two end the run anyway)."""
    if not model_code_running():
        return False
    try:
        return getattr(llm.get_client().config, "errors_in_model_code", "raise") == "string"
    except Exception:  # noqa: BLE001 - no usable configuration: the call's own error is raised as it is
        return False


def interrupted(state: ReplState) -> KeyboardInterrupt:
    """The interrupt a helper raises when a model call was cancelled; the run records it."""
    if state.run is not None:
        state.run.interrupted = True
    return KeyboardInterrupt("interrupted while waiting for a model call")


def budget_hit(state: ReplState, message: str) -> QueryError:
    """The error a helper raises when the budget ran out; the run records it (and ends)."""
    if state.run is not None:
        state.run.budget_error = message
    return QueryError(f"budget exceeded: {message}")


def _budget_spent(state: ReplState) -> bool:
    return state.run is not None and bool(state.run.budget_error)


def _as_text(err: ReplError, items: int, item_text: str) -> object:
    """A failure as the value the helper returns in `string` mode (`item_text` formats a failed item)."""
    if isinstance(err, QueryBatchError):
        return [
            "Error: " + item_text.format(i=i, reason=err.errors[i]) if i in err.errors else str(r)
            for i, r in enumerate(err.results)
        ]
    return f"Error: {err}" if not items else [f"Error: {err}"] * items


@contextlib.contextmanager
def translated(
    state: ReplState,
    helper: str,
    *,
    error: Callable[[str], ReplError] = QueryError,
    arguments: tuple[type[BaseException], ...] = (CoercionError,),
    batch: str | None = None,
    item_text: str = "{reason}",
    model_call: bool = True,
) -> Iterator[Call]:
    """Run a helper's body; turn what it raises into what the cell sees.

    - a bad argument (`arguments`, by default a `CoercionError`): `error(message)`, in both modes;
    - a `ReplError` the body raised on purpose (a sub-RLM without an answer, a failed batch): itself;
    - with `model_call` (the helpers that call a model) also: an interrupt or a cancelled call →
      KeyboardInterrupt; an exhausted budget → QueryError "budget exceeded: …"; a batch with failed items
      (`llm.BatchError`) → `QueryBatchError` whose `batch` (the items' noun) failed; any other deliberate
      error → `error("<helper> failed: …")`. The failed call is recorded first (`Call.on_failure`).
    In `string` mode (`errors_as_text`), a failed model call's error becomes the helper's return value
    (`Call.value`): "Error: <reason>", one per failed item of a batch (`item_text` with `{i}`, `{reason}`);
    never once the budget ran out.
    """
    call = Call()
    try:
        yield call
    except arguments as err:
        raise error(str(err)) from None
    except ReplError as err:
        if model_call and isinstance(err, QueryError | QueryBatchError) and _text_mode(state):
            call.value = _as_text(err, call.items, item_text)
            return
        raise err from None
    except (KeyboardInterrupt, llm.LLMCancelled):
        if not model_call:
            raise
        raise interrupted(state) from None
    except llm.BudgetExceeded as err:
        if not model_call:
            raise
        call.failed(err)
        raise budget_hit(state, str(err)) from None
    except llm.BatchError as err:
        if not model_call:
            raise
        call.failed(err)
        spent = next((e for e in err.errors.values() if "budget" in e.lower()), None)
        if spent is not None and state.run is not None:
            state.run.budget_error = spent
        failure = QueryBatchError.of(err.texts(), err.errors, batch or "items")
        if spent is None and _text_mode(state):
            call.value = _as_text(failure, call.items, item_text)
            return
        raise failure from None
    except RLMError as err:
        if not model_call:
            raise
        call.failed(err)
        failure = error(f"{helper} failed: {err}")
        if _text_mode(state):
            call.value = _as_text(failure, call.items, item_text)
            return
        raise failure from None


def _text_mode(state: ReplState) -> bool:
    return not _budget_spent(state) and errors_as_text()
