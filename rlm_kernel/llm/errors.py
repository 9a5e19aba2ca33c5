"""Errors of the LLM layer: every one carries text only (no httpx objects, no keys) and derives from RLMError.

Cells see these; they are raised `from None` so no chained exception can carry a request or a header.
"""

from __future__ import annotations

from rlm_kernel.errors import RLMError

__all__ = [
    "BatchError",
    "BudgetExceeded",
    "ConfigError",
    "LLMCancelled",
    "LLMError",
    "NoProviderConfigured",
    "ProviderBudgetExceeded",
    "ProviderError",
    "RateLimited",
    "ReplayMiss",
]


class LLMError(RLMError):
    """Base of the LLM layer's errors."""


class ConfigError(LLMError):
    """Invalid configuration. `key` names the offending setting, `source` where it came from."""

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.source = source


class NoProviderConfigured(ConfigError):
    """No provider is configured and the offline local model is unavailable."""


class ProviderError(LLMError):
    """The provider answered with an error, an unreadable reply, or could not be reached.

    `status` is the HTTP status (None for transport failures), `retryable` whether retrying could help,
    `timed_out` whether a transport failure was a timeout (not a refused or failed connection), `provider` and
    `model` name the call's target.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        timed_out: bool = False,
        provider: str | None = None,
        model: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.timed_out = timed_out
        self.provider = provider
        self.model = model
        self.request_sent = status is not None
        """Whether the request reached the server (an HTTP status came back, or a transport failure came
        after the connection was made): the LLM broker charges a call that may have been served."""


class ReplayMiss(LLMError):
    """Replay mode (strictly offline) met a call that was never recorded; the message names the call."""


class BudgetExceeded(LLMError):
    """A call would exceed a budget limit; it was not sent.

    `limit` is the limit's name (e.g. "max_usd"), `limit_value` its value, `used` what was already spent
    (settled plus reserved), `requested` what this call would need at worst.
    """

    def __init__(
        self,
        message: str,
        *,
        limit: str = "",
        limit_value: float = 0.0,
        used: float = 0.0,
        requested: float = 0.0,
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.limit_value = limit_value
        self.used = used
        self.requested = requested


class RateLimited(ProviderError):
    """The provider or gateway answered HTTP 429 for a rate limit (retried after its wait, then this).

    `retry_after` is the wait in seconds it asked for (None when it named none).
    """

    def __init__(self, message: str, *, retry_after: float | None = None, **fields: object) -> None:
        super().__init__(message, **fields)  # type: ignore[arg-type]
        self.retry_after = retry_after


class ProviderBudgetExceeded(BudgetExceeded, ProviderError):
    """The provider or a gateway in front of it (LiteLLM's proxy) refused the call: a budget or quota that it
    keeps (a virtual key's, user's, team's or model's) is spent. Never retried.

    `limit` is "provider_budget"; `limit_value` and `used` are the USD figures the answer stated (0 when it
    stated none); `status`, `provider` and `model` as for `ProviderError`.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str | None = None,
        model: str | None = None,
        limit_value: float = 0.0,
        used: float = 0.0,
    ) -> None:
        BudgetExceeded.__init__(self, message, limit="provider_budget", limit_value=limit_value, used=used)
        self.status = status
        self.retryable = False
        self.timed_out = False
        self.provider = provider
        self.model = model


class LLMCancelled(LLMError):
    """Model calls were cancelled (kernel interrupt or `cancel_all()`)."""


class BatchError(LLMError):
    """Some items of a batch failed; every finished result is kept. The package's one partial-failure type:
    the client raises it, the analysis helpers read it, and the REPL's `QueryBatchError` is this type under
    the name cells catch.

    `results[i]` is item i's result (a `Completion` from the client, its text from the REPL helpers) or None
    where it failed; `errors` maps each failed index to its error text, in input order.
    """

    def __init__(self, message: str, *, results: list, errors: dict[int, object]) -> None:
        super().__init__(message)
        self.results = list(results)
        self.errors = {int(i): str(e) for i, e in sorted(errors.items())}  # text, in input order

    def texts(self) -> list[str | None]:
        """`results` as text: a completion's `.text`, a string as it is, None where the item failed."""
        return [r if r is None or isinstance(r, str) else str(r.text) for r in self.results]
