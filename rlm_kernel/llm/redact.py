"""Key redaction: every string leaving the LLM layer (errors, reprs, warnings, logs) passes through `redact`.

Known secret values are registered when configuration is loaded; key-shaped strings are masked by pattern.
"""

from __future__ import annotations

import logging
import re
import threading

__all__ = [
    "REDACTED",
    "RedactingFilter",
    "forget_secret",
    "install_log_redaction",
    "redact",
    "register_secret",
]

REDACTED = "[REDACTED]"
_lock = threading.Lock()
_secrets: set[str] = set()
_secret_re: re.Pattern[str] | None = None

_PATTERNS = [
    # header-style: Authorization: Bearer xxx / x-api-key: xxx / x-goog-api-key=xxx (also JSON/dict reprs)
    re.compile(
        r"""(?i)((?:authorization|proxy-authorization)["']?\s*[:=]\s*["']?(?:bearer|basic|token)?\s*)[^\s"',}]+"""
    ),
    re.compile(r"""(?i)((?:x-api-key|x-goog-api-key|api[-_]?key)["']?\s*[:=]\s*["']?)[^\s"',}&]+"""),
    # credentials inside URLs: scheme://user:password@host
    re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+(?=@)"),
    # key= / api_key= / token= query parameters
    re.compile(r"(?i)([?&](?:key|api_key|apikey|token|access_token)=)[^&\s\"'#]+"),
    # key-shaped strings: OpenAI/Anthropic/OpenRouter sk-..., Google AIza..., GitHub/HF/xAI/Groq tokens
    re.compile(r"\b()(?:sk|rk|pk)-[A-Za-z0-9_\-]{12,}"),
    re.compile(r"\b()AIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"\b()(?:gh[pousr]_|hf_|xai-|gsk_)[A-Za-z0-9_\-]{16,}"),
]


def register_secret(value: str | None) -> None:
    """Remember `value` so `redact` removes it wherever it appears (values under 6 chars are ignored)."""
    if not value or len(value) < 6:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        _rebuild()


def _rebuild() -> None:
    global _secret_re
    ordered = sorted(_secrets, key=len, reverse=True)
    _secret_re = re.compile("|".join(re.escape(s) for s in ordered)) if ordered else None


def forget_secret(value: str) -> None:
    """Stop redacting `value` specifically (pattern-based redaction still applies)."""
    with _lock:
        if value in _secrets:
            _secrets.discard(value)
            _rebuild()


def redact(text: object) -> str:
    """`str(text)` with registered secrets, auth headers, key query parameters and key-like strings masked."""
    s = str(text)
    pattern = _secret_re
    if pattern is not None:
        s = pattern.sub(REDACTED, s)
    for p in _PATTERNS:
        s = p.sub(lambda m: m.group(1) + REDACTED, s)
    return s


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the formatted message (and drops its args) of every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record must still not leak
            message = str(record.msg)
        record.msg = redact(message)
        record.args = None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


_installed = False


def install_log_redaction() -> None:
    """Attach `RedactingFilter` to the loggers that see requests: ours, httpx, httpcore, aiohttp (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    for name in ("rlm_kernel.llm", "httpx", "httpcore", "aiohttp.client", "aiohttp"):
        logging.getLogger(name).addFilter(RedactingFilter())
