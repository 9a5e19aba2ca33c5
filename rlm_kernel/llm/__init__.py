"""The LLM access layer: config, model tiers, providers, fan-out, retries, budgets, record/replay cache.

Usable without a kernel: `get_client().complete("...")`, `get_client().complete_batch([...])`.
"""

from __future__ import annotations

from rlm_kernel.llm.budget import Budget, get_session_budget
from rlm_kernel.llm.client import Completion, LLMClient, cancel_all, get_client
from rlm_kernel.llm.config import LLMConfig, load_config
from rlm_kernel.llm.errors import (
    BatchError,
    BudgetExceeded,
    ConfigError,
    LLMCancelled,
    LLMError,
    NoProviderConfigured,
    ProviderBudgetExceeded,
    ProviderError,
    RateLimited,
    ReplayMiss,
)
from rlm_kernel.llm.events import CallEvent, bus
from rlm_kernel.llm.session import LLMSession, current_session, use_session

__all__ = [
    "BatchError",
    "Budget",
    "BudgetExceeded",
    "CallEvent",
    "Completion",
    "ConfigError",
    "LLMCancelled",
    "LLMClient",
    "LLMConfig",
    "LLMError",
    "LLMSession",
    "NoProviderConfigured",
    "ProviderBudgetExceeded",
    "ProviderError",
    "RateLimited",
    "ReplayMiss",
    "bus",
    "cancel_all",
    "current_session",
    "get_client",
    "get_session_budget",
    "load_config",
    "use_session",
]
