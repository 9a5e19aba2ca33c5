"""Wire formats: OpenAI-compatible chat completions, Anthropic Messages, Gemini generateContent.

`get_wire(provider)` returns the module that builds requests and parses replies for a provider name.
"""

from __future__ import annotations

from types import ModuleType

from rlm_kernel.llm.providers import anthropic, gemini, openai_compat
from rlm_kernel.llm.providers.base import ChatRequest, ChatResponse, error_text

__all__ = ["PROVIDERS", "ChatRequest", "ChatResponse", "error_text", "get_wire"]

PROVIDERS: dict[str, ModuleType] = {
    "openai": openai_compat,
    "local": openai_compat,
    "anthropic": anthropic,
    "gemini": gemini,
}


def get_wire(provider: str) -> ModuleType:
    """The wire-format module for `provider` ("openai", "local", "anthropic", "gemini")."""
    try:
        return PROVIDERS[provider]
    except KeyError:
        raise ValueError(f"unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}") from None
