"""The analysis helpers' one way to the model: a batch through `rlm_kernel.llm` returning plain strings.

Any failure is the LLM layer's `BatchError`: its `.texts()` are the finished replies (str, None where failed).
Calls are charged to the call scope's budget (a run's, inside `rlm_run`) and noted in its run's trajectory.
"""

from __future__ import annotations

import time
from typing import Any

from rlm_kernel.callscope import current_scope
from rlm_kernel.llm.errors import BatchError, BudgetExceeded, LLMError

__all__ = ["complete_batch"]


def complete_batch(
    prompts: list[str], *, model: str | None, role: str, label: str, max_tokens: int | None = None
) -> list[str]:
    """Run `prompts` through the session client's batched path (budget, retries, cache, fan-out display).

    Raises `BatchError` when any prompt fails (also when the budget or the client refused the whole batch).
    """
    from rlm_kernel.llm import get_client  # imported late: the LLM layer loads config and may start threads

    run = current_scope().run
    started = time.monotonic()
    kind = (label.split(":")[0].split() or ["llm"])[0]  # the helper's name: map_reduce, find_relevant

    def note(completions: list[Any], errors: dict[int, str]) -> None:
        if run is not None:
            run.note_llm_calls(kind, label, completions, errors, time.monotonic() - started, prompts)

    try:
        completions = get_client().complete_batch(
            prompts, model=model, role=role, batch_label=label, max_tokens=max_tokens
        )
    except BatchError as exc:
        note(exc.results + [None] * (len(prompts) - len(exc.results)), exc.errors)
        raise
    except BudgetExceeded as exc:
        note([None] * len(prompts), dict.fromkeys(range(len(prompts)), f"budget exhausted: {exc}"))
        raise BatchError(f"budget exhausted: {exc}", results=[None] * len(prompts), errors={}) from None
    except LLMError as exc:
        note([None] * len(prompts), dict.fromkeys(range(len(prompts)), f"{type(exc).__name__}: {exc}"))
        raise BatchError(f"{type(exc).__name__}: {exc}", results=[None] * len(prompts), errors={}) from None
    note(completions, {})
    return [c.text for c in completions]
