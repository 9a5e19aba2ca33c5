"""A run as steps: the root loop yields each root-model request and resumes with its answer.

`run_rlm_steps` (driver.py) is a generator that yields a `RootRequest` whenever it needs the root model and
returns the `RLMResult`; `drive` answers the requests one at a time, with a blocking call — the sequential
`run_rlm`, and each sub-RLM of `subruns.run_concurrently`, whose task lets the others run while it waits.
Everything but the HTTP call — code blocks, the FINAL check, the history — runs in the thread that drives
the generator: the cell's thread.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

__all__ = ["RootRequest", "RunSteps", "drive"]


@dataclass(frozen=True)
class RootRequest:
    """One root-model call a run needs: what `LLMClient.complete` is given."""

    messages: list[dict]
    model: str | None
    system: str
    budget: object | None
    role: str = "synthesis"

    def call(self) -> Any:
        """Make the call and wait for it (in the caller's thread)."""
        from rlm_kernel import llm

        return llm.get_client().complete(
            self.messages, model=self.model, system=self.system, role=self.role, budget=self.budget
        )


RunSteps = Generator[RootRequest, Any, Any]


def drive(steps: RunSteps) -> Any:
    """Run `steps` to the end, answering each request with a blocking call; returns what `steps` returns.

    A failed call is raised inside the generator at its `yield`, where the loop handles it as before.
    """
    try:
        request = next(steps)
        while True:
            try:
                completion = request.call()
            except BaseException as err:  # noqa: BLE001 - the loop decides (budget, error, interrupt)
                request = steps.throw(err)
            else:
                request = steps.send(completion)
    except StopIteration as stop:
        return stop.value
