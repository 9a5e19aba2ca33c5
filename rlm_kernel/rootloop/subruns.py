"""Parallel sub-RLMs: the runs of `rlm_query_batched` advanced together, on the kernel's main thread.

Each sub-RLM is a `run_rlm_steps` generator (see `steps`) living in its own `contextvars.Context`, so its
budget scope and fan-out stay its own while the others run. The driver starts up to `subrun_concurrency`
runs (setting, default 4), starts each one's root-model call on the LLM loop (`LLMClient.start`), waits for
whichever answer comes first and resumes that run — its code blocks run here, in the thread that called
`rlm_query_batched` (the cell's thread, under the cell's limits) — until it asks the root model again or
ends. Only the HTTP calls overlap; no code of a cell ever runs on another thread.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlm_kernel.llm.config import register_setting
from rlm_kernel.rootloop.steps import RunSteps

__all__ = ["DEFAULT_CONCURRENCY", "concurrency", "register_concurrency_setting", "run_concurrently"]

DEFAULT_CONCURRENCY = 4
_MAX_CONCURRENCY = 64
_WAKE = 0.2  # seconds: the wait wakes this often so interrupts and cell time limits are handled promptly


def _parse_concurrency(value: object) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ValueError(f"subrun_concurrency must be a whole number, got {value!r}") from None
    if not 1 <= n <= _MAX_CONCURRENCY:
        raise ValueError(f"subrun_concurrency must be between 1 and {_MAX_CONCURRENCY}, got {n}")
    return n


def register_concurrency_setting() -> None:
    """Make `subrun_concurrency` (sub-RLMs of one `rlm_query_batched` run at once) a setting."""
    register_setting(
        "subrun_concurrency",
        _parse_concurrency,
        DEFAULT_CONCURRENCY,
        f"how many sub-RLMs of one rlm_query_batched run at once (1-{_MAX_CONCURRENCY}, default "
        f"{DEFAULT_CONCURRENCY}; 1 runs them one after another)",
    )


def concurrency() -> int:
    """The `subrun_concurrency` setting of the session's client."""
    from rlm_kernel import llm

    extra = getattr(llm.get_client().config, "extra", None) or {}
    value = extra.get("subrun_concurrency")
    return int(value) if value else DEFAULT_CONCURRENCY


@dataclass
class _Slot:
    index: int
    ctx: contextvars.Context
    steps: RunSteps
    pending: Any = None
    started: float = field(default_factory=time.monotonic)


class _Driver:
    def __init__(
        self,
        makers: list[Callable[[], RunSteps]],
        limit: int,
        on_start: Callable[[int], None],
        on_end: Callable[[int, object, BaseException | None, float], bool],
    ) -> None:
        self.makers, self.limit = makers, max(1, limit)
        self.on_start, self.on_end = on_start, on_end
        self.waiting = deque(range(len(makers)))
        self.active: dict[int, _Slot] = {}

    def run(self) -> list[int]:
        """Run every item; returns the indexes never started (after `on_end` asked to stop)."""
        try:
            while self.waiting or self.active:
                while self.waiting and len(self.active) < self.limit:
                    i = self.waiting.popleft()
                    ctx = contextvars.copy_context()
                    self.on_start(i)
                    slot = _Slot(i, ctx, ctx.run(self.makers[i]))
                    self.active[i] = slot
                    self.advance(slot, slot.steps.send, (None,))
                if not self.active:
                    continue
                pending = {s.pending.future: s for s in self.active.values()}
                done, _ = concurrent.futures.wait(
                    pending, timeout=_WAKE, return_when=concurrent.futures.FIRST_COMPLETED
                )
                for fut in sorted(done, key=lambda f: pending[f].index):
                    slot = pending[fut]
                    try:
                        completion = slot.pending.result()
                    except Exception as err:  # noqa: BLE001 - the run decides (budget, provider error)
                        self.advance(slot, slot.steps.throw, (err,))
                    else:
                        self.advance(slot, slot.steps.send, (completion,))
        except BaseException:
            self.abandon()
            raise
        return list(self.waiting)

    def advance(self, slot: _Slot, step: Callable[..., Any], args: tuple) -> None:
        """Resume a run (in its own context) until it asks for its next root call, which is started."""
        while True:
            try:
                request = slot.ctx.run(step, *args)
            except StopIteration as stop:
                self.end(slot, stop.value, None)
                return
            except Exception as err:  # noqa: BLE001 - a run that could not even start (e.g. its budget)
                self.end(slot, None, err)
                return
            try:
                slot.pending = slot.ctx.run(request.start)
                return
            except Exception as err:  # noqa: BLE001 - thrown into the run at its yield, as `drive` does
                step, args = slot.steps.throw, (err,)

    def end(self, slot: _Slot, value: object, error: BaseException | None) -> None:
        del self.active[slot.index]
        if not self.on_end(slot.index, value, error, time.monotonic() - slot.started):
            self.waiting.clear()  # e.g. the budget is exhausted: the rest are not started

    def abandon(self) -> None:
        """An interrupt or time limit while runs are in flight: cancel their calls, close their generators."""
        slots, self.active = list(self.active.values()), {}
        for slot in slots:
            if slot.pending is not None:
                slot.pending.cancel()
        for slot in slots:
            try:
                slot.ctx.run(slot.steps.close)
            except Exception:  # noqa: BLE001,S110 - closing is best effort; the interrupt is what matters
                pass


def run_concurrently(
    makers: list[Callable[[], RunSteps]],
    limit: int,
    on_start: Callable[[int], None],
    on_end: Callable[[int, object, BaseException | None, float], bool],
) -> list[int]:
    """Run the step generators `makers[i]()` with at most `limit` in flight; returns the indexes not started.

    `on_start(i)` is called before item i starts; `on_end(i, result, error, seconds)` when it ends (with what
    its generator returned, or the exception it raised) and returns False to start no more items. An
    exception raised by `on_end`, an interrupt or a cell time limit cancels the calls in flight, closes
    the other runs and propagates.
    """
    return _Driver(makers, limit, on_start, on_end).run()
