"""Credential variables taken out of the kernel's environment into a private store only the LLM layer reads.

Started by `python -m rlm_kernel`, the kernel stores only references to the keys (the broker process holds the
values); without the broker, the values themselves, out of `os.environ`. Cells never see either.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import MutableMapping

__all__ = [
    "SECRETS_FD_VAR",
    "get_secret",
    "is_secret_name",
    "load_secrets_from_fd",
    "set_secret",
    "take_secrets_from_environ",
]

SECRETS_FD_VAR = "RLM_SECRETS_FD"
_SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|KEY_?ID|TOKEN|ACCESS_?TOKEN|SECRET|SECRET_?KEY|ACCESS_?KEY|PASSWORD|PASSWD|CREDENTIALS?)$",
    re.IGNORECASE,
)
_store: dict[str, str] = {}


def is_secret_name(name: str) -> bool:
    """True for names such as OPENAI_API_KEY, RLM_API_KEY, HF_TOKEN, AWS_SECRET_ACCESS_KEY."""
    return bool(_SECRET_NAME.search(name))


def take_secrets_from_environ(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Move secret-looking variables from `environ` (default os.environ) to the store; return their names."""
    env = os.environ if environ is None else environ
    taken = sorted(name for name in env if is_secret_name(name))
    for name in taken:
        _store[name] = env.pop(name)
    return taken


def load_secrets_from_fd(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Read secrets handed over through the pipe named by RLM_SECRETS_FD (set by `python -m rlm_kernel`)."""
    env = os.environ if environ is None else environ
    raw = env.pop(SECRETS_FD_VAR, None)
    if raw is None:
        return []
    fd = int(raw)
    with os.fdopen(fd, "rb") as pipe:
        data = json.loads(pipe.read().decode("utf-8") or "{}")
    _store.update({str(k): str(v) for k, v in data.items()})
    return sorted(data)


def get_secret(name: str) -> str | None:
    """The stored value of `name` (e.g. "OPENAI_API_KEY"), or None."""
    return _store.get(name)


def set_secret(name: str, value: str) -> None:
    """Store a secret given another way (e.g. by the LLM layer's config file)."""
    _store[name] = value
