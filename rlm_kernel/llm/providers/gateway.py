"""What a provider's or an LLM gateway's error answer means (spent budget, rate limit, other), and the cost
a gateway reports for a call.

LiteLLM's proxy answers a spent budget (a virtual key's, a user's, a team's or a model's `max_budget`) and its
own rate limits alike with HTTP 429 (older releases: 400 for budgets) and a `llm_provider-retry-after` header;
only the body tells them apart: `{"error": {"type": "budget_exceeded", ...}}` or a message such as "Budget has
been exceeded!", "ExceededBudget: ...", "crossed budget". OpenAI says a spent quota with a 429 whose code is
`insufficient_quota`. A spent budget is never worth retrying; a rate limit is. Successful replies through the
proxy carry `x-litellm-response-cost` (USD).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["ErrorKind", "budget_figures", "classify_error", "reported_cost"]

ErrorKind = Literal["budget", "rate_limit", "other"]

_BUDGET_TYPES = frozenset({"budget_exceeded", "insufficient_quota"})
_BUDGET_TEXT = re.compile(
    r"budget has been exceeded|exceeded ?budget|crossed budget|over budget|insufficient_quota"
    r"|exceeded your current quota|credit balance is too low",
    re.IGNORECASE,
)
_FIGURES = (
    re.compile(r"current cost:\s*([0-9.eE+-]+),\s*max budget:\s*([0-9.eE+-]+)", re.IGNORECASE),
    re.compile(r"spend\s*=\s*([0-9.eE+-]+),\s*budget\s*=\s*([0-9.eE+-]+)", re.IGNORECASE),
)
COST_HEADER = "x-litellm-response-cost"


def _error_fields(body: bytes) -> tuple[list[str], str]:
    """The error's type/code words and its message (empty when the body is not a JSON error)."""
    try:
        data: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return [], body[:2000].decode("utf-8", "replace")
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, dict):
        return [], ""
    err = data.get("error", data)
    if isinstance(err, str):
        return [], err
    if not isinstance(err, dict):
        return [], ""
    words = [str(err.get(k)).lower() for k in ("type", "code", "status") if isinstance(err.get(k), str)]
    message = err.get("message") or err.get("detail") or ""
    return words, message if isinstance(message, str) else json.dumps(message)[:2000]


def classify_error(status: int, body: bytes) -> ErrorKind:
    """ "budget" for a spent budget or quota (any 4xx whose body says so), "rate_limit" for any other 429,
    else "other"."""
    if 400 <= status < 500:
        words, message = _error_fields(body)
        if _BUDGET_TYPES.intersection(words) or _BUDGET_TEXT.search(message):
            return "budget"
    if status == 429:
        return "rate_limit"
    return "other"


def reported_cost(headers: Mapping[str, str]) -> float | None:
    """The USD cost a gateway reported for this reply (`x-litellm-response-cost`), or None when absent or not
    a finite number ≥ 0."""
    raw = headers.get(COST_HEADER)
    if raw is None:
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def budget_figures(message: str) -> tuple[float, float] | None:
    """(spent, limit) in USD when a budget message states them ("Current cost: X, Max budget: Y",
    "Spend=X, Budget=Y"), else None."""
    for pattern in _FIGURES:
        found = pattern.search(message)
        if found:
            try:
                spent, limit = float(found.group(1)), float(found.group(2))
            except ValueError:
                continue
            if math.isfinite(spent) and math.isfinite(limit):
                return spent, limit
    return None
