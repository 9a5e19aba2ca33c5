"""`%rlm view PATH` (a saved run as the trajectory viewer) and `%rlm provenance` (model calls by cell)."""

from __future__ import annotations

import shlex

import rlm_kernel.rootloop.provenance as provenance
import rlm_kernel.rootloop.viewer as viewer
from rlm_kernel.magics import register_rlm_subcommand
from rlm_kernel.repl.errors import ReplError

__all__ = ["register", "rlm_view"]


def rlm_view(line: str) -> object:
    """`%rlm view runs/x.jsonl`: the run saved with `rlm_result.to_jsonl(...)` as the collapsible timeline."""
    from rlm_kernel.repl.context import check_allowed

    args = shlex.split(line)
    if len(args) != 1:
        raise ReplError("usage: %rlm view PATH.jsonl (a run saved with rlm_result.to_jsonl(PATH))") from None
    path = check_allowed(args[0])
    if not path.is_file():
        raise ReplError(f"%rlm view: {args[0]!r} is not a file") from None
    try:
        return viewer.view(str(path))
    except (ValueError, OSError) as err:
        raise ReplError(f"%rlm view: {err}") from None


def register() -> bool:
    """Register the subcommands with the kernel's `%rlm` and start the provenance ledger."""
    provenance.ledger.start()
    register_rlm_subcommand("view", rlm_view, "show a run saved with to_jsonl as the trajectory viewer")
    register_rlm_subcommand(
        "provenance", provenance.provenance_table, "model calls by cell: models, tokens, cost, cache keys"
    )
    return True


register()
