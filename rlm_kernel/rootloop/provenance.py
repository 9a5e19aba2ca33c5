"""Provenance: which model calls each cell made, stamped on the cell's outputs and summarised by cell.

The ledger listens to the LLM layer's events (`finish` and `cached`, tagged with the cell's msg_id as
`owner`) and keeps, per cell, the models, tokens, cost, cache hits and cache keys of its calls. The kernel's
display hook and publisher stamp every output of a cell that made model calls with
`metadata["rlm"] = {"calls", "cache_hits", "models", "input_tokens", "output_tokens", "cost_usd",
"cache_keys"}` (what the cell had spent when the output was sent; "citations" too, the verified citations
of a run's answer, when it gave any, or else "evidence", the spans its sub-calls saw: `repl.evidence`).
`%rlm provenance` lists the cells.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CellCalls", "Ledger", "ledger", "provenance_table", "stamp"]

_MAX_KEYS = 200  # distinct cache keys kept per cell (the counts stay exact beyond it)
_MAX_CELLS = 5000


@dataclass
class CellCalls:
    """The model calls of one cell."""

    execution_count: int | None = None
    calls: int = 0
    cache_hits: int = 0
    models: dict[str, int] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cache_keys: list[str] = field(default_factory=list)
    citations: list[dict] = field(default_factory=list)
    evidence: list[dict] = field(default_factory=list)

    def metadata(self) -> dict[str, Any]:
        extra = {"citations": [dict(c) for c in self.citations]} if self.citations else {}
        if self.evidence:
            extra["evidence"] = [dict(e) for e in self.evidence]
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "models": sorted(self.models),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 8),
            "cache_keys": list(self.cache_keys),
            **extra,
        }


class Ledger:
    """Per-cell call records, filled from the event bus (on the LLM loop's thread), read by the kernel."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cells: dict[str, CellCalls] = {}
        self._unsubscribe: Any = None

    def start(self) -> None:
        """Subscribe to the LLM layer's events (once)."""
        if self._unsubscribe is not None:
            return
        from rlm_kernel.llm.events import bus

        self._unsubscribe = bus.subscribe(self.observe)

    def observe(self, event: Any) -> None:
        # one model call each (a fan-out of sub-RLMs reports its items without a model: not calls)
        if event.kind not in ("finish", "cached") or not event.owner or not event.model:
            return
        with self._lock:
            cell = self._cells.get(event.owner)
            if cell is None:
                if len(self._cells) >= _MAX_CELLS:
                    self._cells.pop(next(iter(self._cells)))
                cell = self._cells[event.owner] = CellCalls(execution_count=_running_count())
            if event.kind == "cached":
                cell.cache_hits += 1
            else:
                cell.calls += 1
            name = event.model or "?"
            cell.models[name] = cell.models.get(name, 0) + 1
            cell.input_tokens += int(event.input_tokens or 0)
            cell.output_tokens += int(event.output_tokens or 0)
            cell.cost_usd += float(event.cost_usd or 0.0)
            key = (event.extra or {}).get("cache_key")
            # distinct keys: the same call made twice is one recording, one key
            if isinstance(key, str) and len(cell.cache_keys) < _MAX_KEYS and key not in cell.cache_keys:
                cell.cache_keys.append(key)

    def numbered(self, owner: str | None, execution_count: int | None) -> None:
        """Remember which execution count the cell `owner` ran as (for the summary)."""
        if not owner:
            return
        with self._lock:
            cell = self._cells.setdefault(owner, CellCalls())
            if cell.execution_count is None:
                cell.execution_count = execution_count

    def cited(self, owner: str | None, citations: list[dict], evidence: list[dict] | None = None) -> None:
        """Remember the verified citations (or the sub-calls' evidence) of the answer cell `owner` gave
        (its `metadata["rlm"]`)."""
        if not owner or not (citations or evidence):
            return
        with self._lock:
            cell = self._cells.setdefault(owner, CellCalls(execution_count=_running_count()))
            cell.citations = [dict(c) for c in citations[:50]]
            cell.evidence = [dict(e) for e in (evidence or [])[:50]]

    def for_cell(self, owner: str | None) -> dict[str, Any] | None:
        """The `rlm` metadata for cell `owner`, or None when it made no model calls (yet)."""
        if not owner:
            return None
        with self._lock:
            cell = self._cells.get(owner)
            if cell is None or not (cell.calls or cell.cache_hits):
                return None
            return cell.metadata()

    def cells(self) -> list[CellCalls]:
        with self._lock:
            return [
                CellCalls(
                    **{
                        **c.__dict__,
                        "models": dict(c.models),
                        "cache_keys": list(c.cache_keys),
                        "citations": list(c.citations),
                        "evidence": list(c.evidence),
                    }
                )
                for c in self._cells.values()
                if c.calls or c.cache_hits
            ]


def _running_count() -> int | None:
    """The running cell's number (IPython counts a cell before it runs it), None outside a kernel."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return None
    shell = get_ipython()
    count = getattr(shell, "execution_count", None)
    return count - 1 if isinstance(count, int) else None


ledger = Ledger()


def stamp(metadata: Any, owner: str | None, execution_count: int | None = None) -> Any:
    """`metadata` with `rlm` provenance added when cell `owner` made model calls (unchanged otherwise)."""
    ledger.numbered(owner, execution_count)
    info = ledger.for_cell(owner)
    if info is None:
        return metadata
    out = dict(metadata) if isinstance(metadata, dict) else {}
    out["rlm"] = info
    return out


def provenance_table(line: str = "") -> object:
    """`%rlm provenance`: per cell, its model calls, cache hits, models, tokens, cost and cache keys."""
    from rlm_kernel.llm.settings_magic import Table

    rows = []
    total = CellCalls()
    for c in ledger.cells():
        rows.append(
            [
                f"[{c.execution_count}]" if c.execution_count is not None else "?",
                c.calls,
                c.cache_hits,
                ", ".join(f"{m} ×{n}" for m, n in sorted(c.models.items())),
                f"{c.input_tokens:,} / {c.output_tokens:,}",
                f"${c.cost_usd:.4f}",
                len(c.cache_keys),
            ]
        )
        total.calls += c.calls
        total.cache_hits += c.cache_hits
        total.cost_usd += c.cost_usd
    note = (
        f"{total.calls} call(s), {total.cache_hits} cache hit(s), ${total.cost_usd:.4f} in all. Each output "
        "of these cells carries the same figures and its cache keys in metadata['rlm']; a re-run with "
        "RLM_CACHE=replay should show the same keys as cache hits."
        if rows
        else "no cell has made a model call yet in this session"
    )
    header = ["cell", "calls", "cache hits", "models", "tokens in / out", "cost", "distinct cache keys"]
    return Table("Model calls by cell", header, rows, note)
