"""Model tiers: `fast`, `balanced`, `powerful` map to configured models; `auto` picks one by a fixed rule.

The auto rule: a `synthesis` call → powerful; a `map` call → fast when the prompt is at most
`auto_fast_max_tokens` estimated tokens (default 8000), else balanced. Other strings are literal model names.
"""

from __future__ import annotations

from rlm_kernel.llm.config import TIERS, LLMConfig
from rlm_kernel.llm.errors import ConfigError

__all__ = ["AUTO", "ROLES", "choose_tier", "estimate_tokens", "resolve_model"]

AUTO = "auto"
ROLES = ("map", "synthesis")


def estimate_tokens(text: str) -> int:
    """A provider-independent token estimate: one token per 4 characters, rounded up (at least 1 per text)."""
    return max(1, (len(text) + 3) // 4) if text else 0


def choose_tier(role: str, prompt_tokens: int, fast_max_tokens: int = 8000) -> str:
    """The tier `auto` picks for a call of `role` whose prompt has `prompt_tokens` estimated tokens."""
    if role not in ROLES:
        raise ValueError(f"role must be 'map' or 'synthesis', got {role!r}")
    if role == "synthesis":
        return "powerful"
    return "fast" if prompt_tokens <= fast_max_tokens else "balanced"


def resolve_model(
    model: str | None, *, role: str, prompt_tokens: int, config: LLMConfig
) -> tuple[str | None, str]:
    """(tier or None, model name) for a call. `model` None means `auto`; a non-tier string is used as is."""
    name = (model or AUTO).strip()
    if name == AUTO:
        tier = choose_tier(role, prompt_tokens, config.auto_fast_max_tokens)
    elif name in TIERS:
        tier = name
    else:
        return None, name
    chosen = config.models.get(tier)
    if not chosen:
        raise ConfigError(
            f"no model configured for tier {tier!r} (provider {config.provider!r} at {config.base_url}); "
            f"set RLM_MODEL or RLM_MODEL_{tier.upper()} (or `%rlm set model_{tier}=...`)",
            key=f"model_{tier}",
        )
    return tier, chosen
