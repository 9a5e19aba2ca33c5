"""`%rlm security` and the banner's security lines: which protection layers hold in this kernel, and why not.

Shows the sandbox policy, the OS layers (Landlock, seccomp), the allowed roots and the configured model
endpoints — never a key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rlm_kernel.llm.config import load_config
from rlm_kernel.llm.redact import redact
from rlm_kernel.llm.settings_magic import Table
from rlm_kernel.magics import register_rlm_subcommand
from rlm_kernel.sandbox.confine import UNSAFE_POLICY_ENV, policy_disabled, status

__all__ = ["banner_lines", "security_command"]

NOT_LAUNCHED = "not applied — this kernel was not started by `python -m rlm_kernel` (the launcher applies it)"


def banner_lines() -> str:
    """One line per layer, for the kernel banner (UNSAFE in capitals when the policy is switched off)."""
    st = status()
    if st is None:
        lines = [f"OS layer: {NOT_LAUNCHED}"]
        if policy_disabled():
            lines.insert(
                0, f"UNSAFE: {UNSAFE_POLICY_ENV}=1 — cells run as PLAIN PYTHON WITHOUT THE SANDBOX POLICY."
            )
        return "\n".join(lines)
    return st.summary()


def _endpoints() -> list[list[str]]:
    try:
        config = load_config()
    except Exception as exc:  # noqa: BLE001 - a broken config is shown, not raised
        return [["model endpoint", f"not configured ({str(exc)[:200]})"]]
    url = redact(config.base_url) if config.base_url else "(provider default)"
    key = "key present" if config.has_api_key else "no key"
    return [["model endpoint", f"{config.provider or '?'} at {url} ({key})"]]


def _context_roots() -> list[list[str]]:
    """One row per directory `load_context` may read, with where it came from."""
    try:
        from rlm_kernel.repl import context
    except Exception as exc:  # noqa: BLE001 - shown, not raised
        return [["context root", f"unknown ({str(exc)[:200]})"]]
    given = {
        str(Path(p).expanduser().resolve())
        for p in os.environ.get(context.ROOTS_ENV, "").lstrip("=").split(os.pathsep)
        if p.strip()
    }
    rows = []
    for root in context.allowed_roots():
        if root == context._start_dir:
            why = "the notebook's directory"
        elif str(root) in given:
            why = context.ROOTS_ENV
        else:
            why = "set by the kernel"
        rows.append(["context root", f"{root} ({why})"])
    if context._start_dir not in context.allowed_roots():
        rows.append(["context root", f"not the notebook's directory ({context.ROOTS_ENV} replaces it)"])
    return rows or [["context root", "none: load_context cannot read files"]]


def security_command(line: str) -> Any:
    """`%rlm security`: the layers, the roots, the endpoints."""
    rows: list[list[str]] = []
    if policy_disabled():
        rows.append(["sandbox policy", f"OFF — UNSAFE ({UNSAFE_POLICY_ENV}=1, for tests only)"])
    else:
        rows.append(["sandbox policy", "active — RestrictedPython policy, guards, facades, limits"])
    rows += _context_roots()
    st = status()
    if st is None:
        rows.append(["OS layer", NOT_LAUNCHED])
    else:
        rows += [
            [layer.name, ("active — " if layer.active else "NOT active — ") + layer.detail]
            for layer in st.layers
        ]
        rows.append(
            [
                "network",
                "allowed for model calls" if st.network else "none (model calls go through the broker)",
            ]
        )
        rows += [["read root", root] for root in st.read_roots]
        rows += [["write", path] for path in st.write_roots]
    rows += _endpoints()
    return Table("rlm kernel security", ["layer", "state"], rows)


register_rlm_subcommand(
    "security", security_command, "which protection layers are active, the roots, the endpoints"
)
