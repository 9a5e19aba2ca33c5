"""The allowed roots: the directories cells may read context from (and save runs into), for every layer above.

The kernel's working directory (the notebook's directory) tree plus `$RLM_CONTEXT_ROOTS`, unless the kernel
replaced them with `set_allowed_roots` (kernel-side only, never exposed to cells).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["ROOTS_ENV", "ROOTS_ONLY_ENV", "START_DIR", "allowed_roots", "set_allowed_roots"]

ROOTS_ENV = "RLM_CONTEXT_ROOTS"
ROOTS_ONLY_ENV = "RLM_CONTEXT_ROOTS_ONLY"
START_DIR = Path.cwd().resolve()
_roots_override: list[Path] | None = None


def set_allowed_roots(roots: Iterable[str | os.PathLike] | None) -> None:
    """Kernel-side setting (never exposed to cells): replace the allowed roots; None restores the default."""
    global _roots_override
    _roots_override = None if roots is None else [Path(r).expanduser().resolve() for r in roots]


def allowed_roots() -> list[Path]:
    """The directories context may be read from: `set_allowed_roots`, else the kernel's working directory
    (the notebook's directory) tree plus the `$RLM_CONTEXT_ROOTS` directories (os.pathsep-separated).

    The roots given replace the notebook's directory only when asked to: a leading `=` in the variable
    (`RLM_CONTEXT_ROOTS==/data`) or `RLM_CONTEXT_ROOTS_ONLY=1`."""
    if _roots_override is not None:
        return list(_roots_override)
    env = os.environ.get(ROOTS_ENV, "").strip()
    only = env.startswith("=") or os.environ.get(ROOTS_ONLY_ENV, "").strip().lower() in ("1", "true", "yes")
    given = [Path(p).expanduser().resolve() for p in env.lstrip("=").split(os.pathsep) if p.strip()]
    if only and given:
        return given
    return list(dict.fromkeys([START_DIR, *given]))
