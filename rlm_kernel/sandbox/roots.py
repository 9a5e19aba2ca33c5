"""The allowed roots: the directories cells may read context from (and save runs into), for every layer above.

The kernel's working directory (the notebook's directory) tree plus `$RLM_CONTEXT_ROOTS`: the notebook's
author sets them before the kernel starts (the launcher gives the same roots to the OS layer), and nothing in
the kernel changes them later, so they are read from the environment each time and kept nowhere else. Tests
set the variable (`monkeypatch.setenv`) instead of patching module state.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ROOTS_ENV", "ROOTS_ONLY_ENV", "START_DIR", "allowed_roots"]

ROOTS_ENV = "RLM_CONTEXT_ROOTS"
ROOTS_ONLY_ENV = "RLM_CONTEXT_ROOTS_ONLY"
START_DIR = Path.cwd().resolve()


def allowed_roots(env: Mapping[str, str] | None = None) -> list[Path]:
    """The directories context may be read from: the kernel's working directory (the notebook's directory)
    tree plus the `$RLM_CONTEXT_ROOTS` directories (os.pathsep-separated) of `env` (default: os.environ).

    The roots given replace the notebook's directory only when asked to: a leading `=` in the variable
    (`RLM_CONTEXT_ROOTS==/data`) or `RLM_CONTEXT_ROOTS_ONLY=1`."""
    env = os.environ if env is None else env
    given_text = env.get(ROOTS_ENV, "").strip()
    only = given_text.startswith("=") or env.get(ROOTS_ONLY_ENV, "").strip().lower() in ("1", "true", "yes")
    given = [Path(p).expanduser().resolve() for p in given_text.lstrip("=").split(os.pathsep) if p.strip()]
    if only and given:
        return given
    return list(dict.fromkeys([START_DIR, *given]))
