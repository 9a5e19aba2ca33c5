"""The budget ledger: the broker's authoritative budgets, one per budget the kernel names in a request.

The kernel's `Budget` objects (the session's, a run's, a sub-run's) are what people see; each request names
its budget chain (`llm.broker_protocol.chain_to_wire`: root first, with id, label, limits, elapsed time and
what the kernel has settled so far). The broker keeps one `Budget` per id (`Ledger`): before a call it
reserves the call's worst case on the chain — or refuses it with `BudgetExceeded` — and after it settles the
real usage; the kernel mirrors each reservation and settlement from the frames it gets back. A budget the
broker has not seen (a new run, or a broker restarted after a crash) starts from the kernel's settled
figures, so a restart never resets what was spent.

The kernel's frames are hostile, so its chain only narrows: every chain hangs below the ledger's own root
budget, made from the start-time limits (`StartConfig`) and shared by every chain id, so a fresh id or a
chain without limits still meets the session's limits and what was spent. The root's spending lives in a
`SpendStore` the supervisor holds (a memfd every broker it forks inherits), so a broker the kernel made exit
hands it on to the next.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

from rlm_kernel.broker.spend_store import SpendStore
from rlm_kernel.llm.broker_protocol import USED as _USED
from rlm_kernel.llm.budget import Budget, Reservation
from rlm_kernel.llm.errors import BudgetExceeded
from rlm_kernel.llm.pricing import cost_usd
from rlm_kernel.llm.providers.base import ChatRequest, ChatResponse
from rlm_kernel.llm.tiers import estimate_tokens

__all__ = ["MAX_TEXT", "ROOT_ID", "Ledger", "estimate_input"]

MAX_SCOPES = 10_000
"""Budgets the ledger remembers by id; beyond, the oldest is forgotten (the root still holds the session)."""
MAX_TEXT = 200
"""Characters of a budget id or label the ledger keeps (a scope lives on after its request)."""
ROOT_ID = "session@broker"
"""The id of the ledger's root budget in snapshots."""

_LIMITS = ("max_calls", "max_input_tokens", "max_output_tokens", "max_usd", "max_seconds", "max_depth")


def estimate_input(req: ChatRequest) -> int:
    """The input-token estimate a call reserves (the same rule the kernel uses to pick a tier)."""
    return sum(estimate_tokens(m["content"]) + 4 for m in req.messages)


def _number(value: Any, what: str) -> float:
    # NaN and infinity (JSON frames may carry them) compare false both ways: a limit or a figure of NaN
    # would never refuse
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise ValueError(f"budget {what} must be a number ≥ 0 (finite), got {value!r}")
    return value


class Ledger:
    """Broker side: one `Budget` per scope id below a root budget of the start-time limits; reserve before a
    call, settle or release after it."""

    def __init__(self, start: Any = None, store: SpendStore | None = None) -> None:
        self._budgets: dict[str, Budget] = {}
        self.start = start
        self.store = store or SpendStore()
        limits = start.root_limits() if start is not None else {}
        self.root = Budget(label="session (start-time limits)", **limits)
        self.root.depth = -1  # the kernel's own session budget, right below, is depth 0 as in the kernel
        kept = self.store.load()
        if kept is not None:
            started, used = kept
            self.root._started = started  # noqa: SLF001 - the session's clock, not this broker's
            self.root._used.update({k: _number(v, k) for k, v in used.items()})  # noqa: SLF001

    def __len__(self) -> int:
        return len(self._budgets)

    def persist(self) -> None:
        """Hand the root's spending on to the next broker (after each reservation and settlement). What is
        reserved counts as spent: a broker killed mid-call (the kernel asked the supervisor for another)
        leaves its calls in flight paid for at their worst case, never forgotten."""
        root = self.root
        committed = {k: root._used[k] + max(0, root._reserved[k]) for k in root._used}  # noqa: SLF001
        self.store.save(root._started, committed)  # noqa: SLF001

    def chain(self, wire: list[dict[str, Any]] | None) -> tuple[Budget, dict[int, str]]:
        """The leaf budget of a chain sent by `chain_to_wire` (made or updated here); id(budget) → scope id.

        Limits follow the kernel's (a `%rlm set budget_usd=` changes them) below the root's start-time
        limits, which also narrow the kernel's session budget (the chain's first entry); spending is this
        ledger's own. No chain (an unscoped call): a budget right below the root."""
        names: dict[int, str] = {id(self.root): ROOT_ID}
        if not wire:
            budget = self._budgets.get("unscoped")
            if budget is None:
                budget = self._budgets["unscoped"] = Budget(parent=self.root, label="unscoped")
            names[id(budget)] = "unscoped"
            return budget, names
        if not isinstance(wire, list) or len(wire) > 64:
            raise ValueError("a request must name its budget chain (at most 64 budgets deep)")
        parent: Budget = self.root
        for position, entry in enumerate(wire):
            if not isinstance(entry, dict) or not isinstance(entry.get("limits"), dict):
                raise ValueError("each budget of a chain needs an id and limits")
            sid = entry["id"]
            if not isinstance(sid, str) or not 0 < len(sid) <= MAX_TEXT:
                raise ValueError(f"a budget id is a text of 1 to {MAX_TEXT} characters")
            if sid in (ROOT_ID, "unscoped"):
                raise ValueError(f"a budget chain may not name {sid!r}")
            limits = {k: entry["limits"].get(k) for k in _LIMITS}
            for k, v in limits.items():
                if v is not None:
                    _number(v, k)
            if position == 0 and self.start is not None:
                limits = self.start.narrow(limits)
            budget = self._budgets.get(sid)
            if budget is None or budget.parent is not parent:
                label = entry.get("label")
                label = label[:MAX_TEXT] if isinstance(label, str) else ""  # kept as long as the scope
                budget = Budget(parent=parent, label=label, **limits)  # type: ignore[arg-type]
                used = entry.get("used") or {}
                # a budget new to this ledger starts from what the kernel has settled (a restarted broker)
                budget._used.update({k: _number(used.get(k, 0), k) for k in _USED})  # noqa: SLF001
                budget._started = time.monotonic() - _number(entry.get("elapsed", 0.0), "elapsed")  # noqa: SLF001
                self._budgets[sid] = budget
                if len(self._budgets) > MAX_SCOPES:  # a kernel naming endless fresh ids: forget the oldest
                    del self._budgets[next(iter(self._budgets))]  # (the root keeps the session's figures)
            elif budget.limits != limits:
                budget.set_limits(**limits)
            names[id(budget)] = sid
            parent = budget
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
    def charge(budget: Budget, reservation: Reservation) -> tuple[int, int, float | None]:
        """Settle a call that got no answer but may have been served (cancelled or timed out once its
        request was out) at its reservation, the worst case; the figures charged."""
        usd = reservation.usd or None
        budget.settle(reservation, reservation.input_tokens, reservation.output_tokens, usd)
        return reservation.input_tokens, reservation.output_tokens, usd

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
        every = {ROOT_ID: self.root, **self._budgets}
        chosen = every if ids is None else {i: every[i] for i in ids if i in every}
        return {sid: b.snapshot() for sid, b in chosen.items()}
