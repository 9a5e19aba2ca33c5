"""The analysis helpers' one way to the model: a batch through `rlm_kernel.llm` returning plain strings.

Any failure becomes text: `BatchFailure` keeps the finished replies (str or None each) and the error texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

    try:
        completions = get_client().complete_batch(
            prompts, model=model, role=role, batch_label=label, max_tokens=max_tokens
        )
    except BatchError as exc:
        texts = [None if c is None else c.text for c in exc.results]
        texts += [None] * (len(prompts) - len(texts))
        raise BatchFailure(str(exc), texts, {int(k): str(v) for k, v in exc.errors.items()}) from None
    except BudgetExceeded as exc:
        raise BatchFailure(f"budget exhausted: {exc}", [None] * len(prompts), {}) from None
    except LLMError as exc:
        raise BatchFailure(f"{type(exc).__name__}: {exc}", [None] * len(prompts), {}) from None
    return [c.text for c in completions]
