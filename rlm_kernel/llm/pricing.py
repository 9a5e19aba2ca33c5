"""USD prices per million tokens for common models; overridable through the `prices` setting.

An unknown model is accounted in tokens only, with one warning per model name.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping

__all__ = ["PRICES", "UnknownPriceWarning", "check_price", "cost_usd", "price_for"]

# (input, output) USD per 1M tokens, list prices as published by the providers (standard tier, no caching).
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-opus-4-0": (15.00, 75.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-sonnet-4-0": (3.00, 15.00),
    "claude-3-7-sonnet-latest": (3.00, 15.00),
    "claude-3-5-haiku-latest": (0.80, 4.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.0-flash-lite": (0.075, 0.30),
    "smollm2-135m-instruct": (0.0, 0.0),  # the offline models (llm/local_models.py) run on this machine
    "qwen2.5-coder-1.5b-instruct": (0.0, 0.0),
    "local": (0.0, 0.0),
}


class UnknownPriceWarning(UserWarning):
    """A model has no known price: its calls are counted in tokens only (USD limits cannot see them)."""


_warned: set[str] = set()
_lock = threading.Lock()


def price_for(
    model: str, overrides: Mapping[str, tuple[float, float]] | None = None
) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens for `model`, from `overrides` then the table.

    Dated names match their base name ("gpt-4o-mini-2024-07-18" → "gpt-4o-mini"), and a path prefix is
    ignored ("models/gemini-2.5-pro" → "gemini-2.5-pro").
    """
    name = model.split("/")[-1]
    for table in (overrides or {}, PRICES):
        if model in table:
            return table[model]
        if name in table:
            return table[name]
    best = max((k for k in PRICES if name.startswith(k + "-")), key=len, default=None)
    return PRICES[best] if best else None


def check_price(
    model: str, overrides: Mapping[str, tuple[float, float]] | None = None, *, stacklevel: int = 2
) -> bool:
    """Whether `model` has a price; warns once per model when it has none (call it in the caller's thread)."""
    if price_for(model, overrides) is not None:
        return True
    with _lock:
        first = model not in _warned
        _warned.add(model)
    if first:
        warnings.warn(
            f"no price known for model {model!r}: its calls are counted in tokens only; "
            "set prices with the `prices` setting (see the README's LLM section)",
            UnknownPriceWarning,
            stacklevel=stacklevel + 1,
        )
    return False


def cost_usd(
    model: str,
    input_tokens: int,
    output_tokens: int,
    overrides: Mapping[str, tuple[float, float]] | None = None,
) -> float | None:
    """USD for a call, or None when the model's price is unknown (see `check_price` for the warning)."""
    price = price_for(model, overrides)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
