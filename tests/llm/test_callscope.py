"""The call scope: one contextvar carries budget, owner, parent batch and run; blocks nest and restore."""

from __future__ import annotations

import threading

from rlm_kernel.callscope import CallScope, call_scope, current_scope
from rlm_kernel.llm.budget import Budget, budget_scope, current_budget, get_session_budget
from rlm_kernel.llm.events import current_batch, current_owner, inside_batch


class _Run:
    def note_llm_calls(self, *args: object) -> None:
        pass


def test_fields_nest_and_are_restored() -> None:
    assert current_scope() == CallScope()
    run = _Run()
    budget = Budget(label="run")
    with call_scope(owner="cell-1"):
        with call_scope(budget=budget, run=run):
            with inside_batch("batch-1"):
                scope = current_scope()
                assert (scope.owner, scope.budget, scope.run, scope.parent_batch_id) == (
                    "cell-1",
                    budget,
                    run,
                    "batch-1",
                )
                assert current_owner() == "cell-1" and current_batch() == "batch-1"
                assert current_budget() is budget
            assert current_batch() is None
        assert current_scope() == CallScope(owner="cell-1")
    assert current_scope() == CallScope() and current_owner() is None


def test_budget_scope_sets_the_scope_budget_and_the_session_is_the_default() -> None:
    assert current_budget() is get_session_budget()
    run = Budget(label="run")
    with budget_scope(run):
        assert current_scope().budget is run and current_budget() is run
    assert current_budget() is get_session_budget()


def test_a_new_thread_starts_from_the_empty_scope() -> None:
    """Threads do not inherit a cell's scope: the LLM client reads it in the caller's thread and sends it."""
    seen: list[CallScope] = []
    with call_scope(owner="cell-2"):
        t = threading.Thread(target=lambda: seen.append(current_scope()))
        t.start()
        t.join()
    assert seen == [CallScope()]
