"""The analysis helpers' one way to the model: a batch through `rlm_kernel.llm` returning plain strings.

Any failure becomes text: `BatchFailure` keeps the finished replies (str or None each) and the error texts.
Calls are charged to the call scope's budget (a run's, inside `rlm_run`) and noted in its run's trajectory.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rlm_kernel.callscope import current_scope

__all__ = ["BatchFailure", "complete_batch"]


@dataclass
class BatchFailure(Exception):
    """Some prompts of a batch failed; `texts[i]` is reply i or None, `errors[i]` the error text of item i."""

    message: str
    texts: list[str | None] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


def complete_batch(
    prompts: list[str], *, model: str | None, role: str, label: str, max_tokens: int | None = None
) -> list[str]:
    """Run `prompts` through the session client's batched path (budget, retries, cache, fan-out display)."""
    from rlm_kernel.llm import get_client  # imported late: the LLM layer loads config and may start threads
    from rlm_kernel.llm.errors import BatchError, BudgetExceeded, LLMError

    run = current_scope().run
    started = time.monotonic()
    kind = (label.split(":")[0].split() or ["llm"])[0]  # the helper's name: map_reduce, find_relevant

    def note(completions: list[Any], errors: dict[int, str]) -> None:
        if run is not None:
            run.note_llm_calls(kind, label, completions, errors, time.monotonic() - started)

    try:
        completions = get_client().complete_batch(
            prompts, model=model, role=role, batch_label=label, max_tokens=max_tokens
        )
    except BatchError as exc:
        texts = [None if c is None else c.text for c in exc.results]
        texts += [None] * (len(prompts) - len(texts))
        errors = {int(k): str(v) for k, v in exc.errors.items()}
        note(list(exc.results) + [None] * (len(prompts) - len(exc.results)), errors)
        raise BatchFailure(str(exc), texts, errors) from None
    except BudgetExceeded as exc:
        note([None] * len(prompts), dict.fromkeys(range(len(prompts)), f"budget exhausted: {exc}"))
        raise BatchFailure(f"budget exhausted: {exc}", [None] * len(prompts), {}) from None
    except LLMError as exc:
        note([None] * len(prompts), dict.fromkeys(range(len(prompts)), f"{type(exc).__name__}: {exc}"))
        raise BatchFailure(f"{type(exc).__name__}: {exc}", [None] * len(prompts), {}) from None
    note(completions, {})
    return [c.text for c in completions]
