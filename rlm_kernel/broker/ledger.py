"""The budget ledger: the broker's authoritative budgets, one per budget the kernel names in a request.

The kernel's `Budget` objects (the session's, a run's, a sub-run's) are what people see; each request names
its budget chain (`llm.broker_protocol.chain_to_wire`: root first, with id, label, limits, elapsed time and
what the kernel has settled so far). The broker keeps one `Budget` per id (`Ledger`): before a call it
reserves the call's worst case on the chain — or refuses it with `BudgetExceeded` — and after it settles the
real usage; the kernel mirrors each reservation and settlement from the frames it gets back. A budget the
broker has not seen (a new run, or a broker restarted after a crash) starts from the kernel's settled
figures, so a restart never resets what was spent.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from rlm_kernel.llm.broker_protocol import USED as _USED
from rlm_kernel.llm.budget import Budget, Reservation
from rlm_kernel.llm.errors import BudgetExceeded
from rlm_kernel.llm.pricing import cost_usd
from rlm_kernel.llm.providers.base import ChatRequest, ChatResponse
from rlm_kernel.llm.tiers import estimate_tokens

__all__ = ["Ledger", "estimate_input"]

_LIMITS = ("max_calls", "max_input_tokens", "max_output_tokens", "max_usd", "max_seconds", "max_depth")


def estimate_input(req: ChatRequest) -> int:
    """The input-token estimate a call reserves (the same rule the kernel uses to pick a tier)."""
    return sum(estimate_tokens(m["content"]) + 4 for m in req.messages)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"budget {what} must be a number ≥ 0, got {value!r}")
    return value


class Ledger:
    """Broker side: one `Budget` per scope id; reserve before a call, settle or release after it."""

    def __init__(self) -> None:
        self._budgets: dict[str, Budget] = {}

    def __len__(self) -> int:
        return len(self._budgets)

    def chain(self, wire: list[dict[str, Any]]) -> tuple[Budget, dict[int, str]]:
        """The leaf budget of a chain sent by `chain_to_wire` (made or updated here); id(budget) → scope id.

        Limits follow the kernel's (a `%rlm set budget_usd=` changes them); spending is this ledger's own."""
        if not isinstance(wire, list) or not wire:
            raise ValueError("a request must name its budget chain")
        parent: Budget | None = None
        names: dict[int, str] = {}
        for entry in wire:
            sid = str(entry["id"])
            limits = {k: entry["limits"].get(k) for k in _LIMITS}
            for k, v in limits.items():
                if v is not None:
                    _number(v, k)
            budget = self._budgets.get(sid)
            if budget is None or budget.parent is not parent:
                budget = Budget(parent=parent, label=str(entry.get("label") or ""), **limits)  # type: ignore[arg-type]
                used = entry.get("used") or {}
                # a budget new to this ledger starts from what the kernel has settled (a restarted broker)
                budget._used.update({k: _number(used.get(k, 0), k) for k in _USED})  # noqa: SLF001
                budget._started = time.monotonic() - _number(entry.get("elapsed", 0.0), "elapsed")  # noqa: SLF001
                self._budgets[sid] = budget
            elif budget.limits != limits:
                budget.set_limits(**limits)
            names[id(budget)] = sid
            parent = budget
        assert parent is not None
        return parent, names

    @staticmethod
    def reserve(budget: Budget, req: ChatRequest, prices: Any, names: dict[int, str]) -> Reservation:
        """Reserve `req`'s worst case on `budget`'s chain, or raise `BudgetExceeded` whose `.scope` is the id
        of the budget that refused."""
        est = estimate_input(req)
        usd = cost_usd(req.model, est, req.max_tokens, prices)
        chain = budget._chain()  # noqa: SLF001 - the ledger reads its own budgets' counters
        before = [b._counts["refused"] for b in chain]  # noqa: SLF001
        try:
            return budget.reserve(est, req.max_tokens, usd)
        except BudgetExceeded as exc:
            after = [b._counts["refused"] for b in chain]  # noqa: SLF001
            refuser = next((b for b, x, y in zip(chain, before, after, strict=True) if y > x), budget)
            exc.scope = names.get(id(refuser))  # type: ignore[attr-defined]
            raise

    @staticmethod
    def settle(
        budget: Budget, reservation: Reservation, req: ChatRequest, resp: ChatResponse, prices: Any
    ) -> tuple[ChatResponse, float | None]:
        """Settle a call with its real usage (estimated if the server reports none); the usage, its price."""
        if not resp.input_tokens and not resp.output_tokens:
            resp = replace(resp, input_tokens=estimate_input(req), output_tokens=estimate_tokens(resp.text))
        usd = (  # what a gateway reported the call cost (LiteLLM's proxy), else our price table's
            resp.cost_usd
            if resp.cost_usd is not None
            else cost_usd(req.model, resp.input_tokens, resp.output_tokens, prices)
        )
        budget.settle(reservation, resp.input_tokens, resp.output_tokens, usd)
        return resp, usd

    def snapshot(self, ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """Plain figures of the named budgets (all when `ids` is None)."""
        chosen = self._budgets if ids is None else {i: self._budgets[i] for i in ids if i in self._budgets}
        return {sid: b.snapshot() for sid, b in chosen.items()}
