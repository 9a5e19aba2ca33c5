"""What a model call is and returns: `Prompt`, `Completion`, a prepared call (`CallItem`), prompt checking."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rlm_kernel.llm.errors import LLMError
from rlm_kernel.llm.providers import ChatRequest, ChatResponse

__all__ = ["CallItem", "Completion", "Prompt", "completion_of", "prompt_messages"]

Prompt = str | Sequence[dict[str, str]]
_ROLES_OK = ("system", "user", "assistant")


@dataclass(frozen=True)
class Completion:
    """One model answer. `str(completion)` is its text. `cached` answers cost nothing (`cost_usd` 0).

    `cost_usd` is None when the model's price is unknown (tokens-only accounting).
    """

    text: str
    model: str
    provider: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    finish_reason: str | None
    request_id: str | None
    cached: bool = False
    tier: str | None = None
    latency_s: float = 0.0

    def __str__(self) -> str:
        return self.text


@dataclass
class CallItem:
    """One prepared call: its place in a batch, the request, the tier it resolved to, its input estimate."""

    index: int
    request: ChatRequest
    tier: str | None
    est_input: int


def prompt_messages(prompt: Prompt, system: str | None) -> tuple[dict[str, str], ...]:
    if isinstance(prompt, str):
        msgs = [{"role": "user", "content": prompt}]
    elif isinstance(prompt, Sequence) and not isinstance(prompt, bytes | bytearray):
        msgs = []
        for i, m in enumerate(prompt):
            if (
                not isinstance(m, dict)
                or m.get("role") not in _ROLES_OK
                or not isinstance(m.get("content"), str)
            ):
                raise LLMError(
                    f"prompt message {i} must be a dict with 'role' (system|user|assistant) and "
                    "'content' (str), "
                    f"got {type(m).__name__}"
                )
            msgs.append({"role": m["role"], "content": m["content"]})
        if not msgs:
            raise LLMError("prompt is an empty list of messages; give a string or at least one message")
    else:
        raise LLMError(f"prompt must be a string or a list of messages, got {type(prompt).__name__}")
    if system is not None:
        if not isinstance(system, str):
            raise LLMError(f"system must be a string, got {type(system).__name__}")
        msgs.insert(0, {"role": "system", "content": system})
    return tuple(msgs)


def completion_of(
    r: ChatResponse, provider: str, tier: str | None, usd: float | None, *, cached: bool, latency: float
) -> Completion:
    """The `Completion` of provider answer `r` (`usd` None: price unknown)."""
    return Completion(
        text=r.text,
        model=r.model,
        provider=provider,
        input_tokens=r.input_tokens,
        output_tokens=r.output_tokens,
        cost_usd=usd,
        finish_reason=r.finish_reason,
        request_id=r.request_id,
        cached=cached,
        tier=tier,
        latency_s=latency,
    )
