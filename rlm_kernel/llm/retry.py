"""Retry policy (openai-python practice) and the shared cool-down that makes one 429 slow a whole batch.

Retry on connect errors, timeouts, 408, 409, 429 and ≥500; wait `retry-after-ms`, else `Retry-After`, else
LiteLLM's `llm_provider-retry-after` (its proxy sends only that), else `min(0.5·2^n, 8)·(1 − 0.25·random)`;
server-requested waits are honoured up to `retry_after_cap` seconds. A 4xx whose body says a budget is spent
is not retried (see providers/gateway.py).
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CoolDown", "RetryPolicy", "backoff_delay", "is_retryable_status", "server_delay"]

RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int, headers: Mapping[str, str] | None = None) -> bool:
    """Whether an HTTP status is worth retrying (`x-should-retry: true|false` overrides)."""
    if headers is not None:
        hint = headers.get("x-should-retry", "").lower()
        if hint == "true":
            return True
        if hint == "false":
            return False
    return status in RETRYABLE_STATUS or status >= 500


def server_delay(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asked to wait: `retry-after-ms`, else `Retry-After` (seconds or HTTP date), else
    `llm_provider-retry-after` (LiteLLM's proxy; same forms)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            value = float(raw_ms) / 1000.0
            if value >= 0 and math.isfinite(value):
                return value
        except ValueError:
            pass
    for name in ("retry-after", "llm_provider-retry-after"):
        value = _seconds(headers.get(name), now)
        if value is not None:
            return value
    return None


def _seconds(raw: str | None, now: float | None) -> float | None:
    """A `Retry-After` value (seconds or an HTTP date) as seconds from now; None if absent or unreadable."""
    if raw:
        try:
            value = float(raw)
            if value >= 0 and math.isfinite(value):
                return value
        except ValueError:
            parsed = email.utils.parsedate_tz(raw)
            if parsed is not None:
                when = email.utils.mktime_tz(parsed)
                return max(0.0, when - (time.time() if now is None else now))
    return None


def backoff_delay(attempt: int, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter for retry number `attempt` (0-based): min(0.5·2^n, 8)·(1 − 0.25·u)."""
    u = (rng or random).random()
    return min(0.5 * 2.0**attempt, 8.0) * (1.0 - 0.25 * u)


@dataclass(frozen=True)
class RetryPolicy:
    """`max_retries` retries after the first attempt; server waits are capped at `retry_after_cap` seconds."""

    max_retries: int = 4
    retry_after_cap: float = 60.0

    def delay(self, attempt: int, headers: Mapping[str, str] | None) -> float:
        """Seconds to wait before retry number `attempt` (0-based)."""
        requested = server_delay(headers) if headers is not None else None
        if requested is not None:
            return min(requested, self.retry_after_cap)
        return backoff_delay(attempt)


class CoolDown:
    """A pause shared by a client's calls: a 429 pushes `until` forward; calls wait for it before sending.

    Lives on the client's event loop (no locks needed: only touched from that loop's thread).
    """

    def __init__(self) -> None:
        self.until = 0.0

    def push(self, seconds: float) -> None:
        """Make every call wait at least `seconds` from now."""
        self.until = max(self.until, time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self.until - time.monotonic())

    async def wait(self) -> None:
        """Sleep until the cool-down has passed (re-checked, since another 429 may extend it)."""
        while (left := self.remaining()) > 0:
            await asyncio.sleep(left)
