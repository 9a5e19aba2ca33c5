"""Per-namespace REPL state the helpers close over, and the options of a root-loop run.

Never handed to sandboxed code: helpers hold it in their closures only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rlm_kernel.rlm.gate import FinalGate
from rlm_kernel.rlm.trajectory import ChildCall, Usage

__all__ = ["LibraryCalls", "ReplState", "RunOptions", "RunTracker"]


@dataclass(frozen=True)
class RunOptions:
    """Options of `%%rlm` / `rlm_run` (also the defaults of the sub-RLMs a run starts)."""

    model: str | None = None
    child_model: str | None = None
    max_iterations: int = 20
    max_depth: int = 2
    budget_usd: float | None = None
    shared: bool = False
    max_no_code_turns: int = 3
    output_chars: int = 4000
    history_turns: int = 12
    preview_chars: int = 500
    best_effort: bool = True
    """One last tool-free turn for a best-effort answer when a run ends without FINAL (rlm/best_effort)."""
    system_prompt: str | None = None
    system_prompt_extra: str | None = None
    tools: tuple = ()
    """((name, notebook function), ...) bound into the run's namespace, listed in the prompt (rlm/tools)."""
    returns: object = None
    """The answer's type (rlm/answer_types), or None for text."""

    def with_(self, **changes: object) -> RunOptions:
        unknown = set(changes) - set(self.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown rlm_run option(s): {', '.join(sorted(unknown))}")
        return replace(self, **changes)

    def check(self) -> RunOptions:
        """Refuse impossible values with a message naming the option."""
        for name in ("max_iterations", "max_depth", "max_no_code_turns", "output_chars", "history_turns"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.budget_usd is not None and (
            not isinstance(self.budget_usd, int | float) or self.budget_usd <= 0
        ):
            raise ValueError(f"budget_usd must be a positive number of dollars, got {self.budget_usd!r}")
        if type(self.best_effort) is not bool:
            raise ValueError(f"best_effort must be True or False, got {self.best_effort!r}")
        for name in ("system_prompt", "system_prompt_extra"):
            value = getattr(self, name)
            if value is not None and (type(value) is not str or not value.strip()):
                raise ValueError(f"{name} must be a non-empty str (or None), got {type(value).__name__}")
        return self


@dataclass
class LibraryCalls:
    """The model calls one library helper (`map_reduce`, `find_relevant`) made: the call scope's run while it
    runs, so its usage lands in the run's trajectory as one entry."""

    usage: Usage = field(default_factory=Usage)
    items: int = 0
    model: str | None = None
    first_error: str | None = None
    budget_error: str | None = None

    def note_llm_calls(
        self, kind: str, label: str, completions: list[Any], errors: dict[int, str], seconds: float
    ) -> None:
        self.items += max(len(completions), 1)
        for c in completions:
            if c is None:
                continue
            self.usage.calls += 1
            self.usage.input_tokens += int(getattr(c, "input_tokens", 0) or 0)
            self.usage.output_tokens += int(getattr(c, "output_tokens", 0) or 0)
            self.usage.cost_usd += float(getattr(c, "cost_usd", 0.0) or 0.0)
            self.model = self.model or getattr(c, "model", None)
        if errors and self.first_error is None:
            first = min(errors)
            self.first_error = f"{label}: {len(errors)} failed (item {first}: {errors[first]})"
        refused = next((e for e in errors.values() if "budget" in e.lower()), None)
        if refused is not None and self.budget_error is None:
            self.budget_error = refused


@dataclass
class RunTracker:
    """What the helpers report to the root loop while one run is in progress."""

    successes: int = 0
    calls: list[ChildCall] = field(default_factory=list)
    final: str | None = None
    final_set: bool = False
    final_value: object = None
    """The value FINAL was given (before it became text): what a typed answer is checked against."""
    rejections: list[str] = field(default_factory=list)
    budget_error: str | None = None
    interrupted: bool = False
    gate: FinalGate = field(default_factory=FinalGate)

    def note_llm_calls(
        self, kind: str, label: str, completions: list[Any], errors: dict[int, str], seconds: float
    ) -> None:
        """Record model calls made in the run by library code outside the helpers: one trajectory entry
        with their usage; a budget refusal among them ends the run as the helpers' do."""
        calls = LibraryCalls()
        calls.note_llm_calls(kind, label, completions, errors, seconds)
        self.add_library_calls(kind, label, calls, seconds)

    def add_library_calls(
        self, kind: str, label: str, calls: LibraryCalls, seconds: float, *, ok: bool | None = None
    ) -> None:
        """One trajectory entry for what `calls` collected (`ok` None: ok when any call was answered)."""
        items = max(calls.items, 1)
        good = calls.usage.calls > 0 if ok is None else ok
        entry = ChildCall(
            kind,
            label[:200],
            good,
            items=items,
            failed=items - calls.usage.calls if calls.items else (0 if good else 1),
            error=calls.first_error,
            model=calls.model,
            usage=calls.usage,
            seconds=seconds,
            saw_context=True,  # library helpers run over the text they are given
        )
        self.calls.append(entry)
        if good:
            self.successes += 1
            self.gate.context_calls += 1
        if calls.budget_error is not None and self.budget_error is None:
            self.budget_error = calls.budget_error

    def drain(self) -> tuple[list[ChildCall], list[str]]:
        calls, rejections = self.calls, self.rejections
        self.calls, self.rejections = [], []
        return calls, rejections


@dataclass
class ReplState:
    """The state one namespace's helpers share. `depth` 0 is a person's notebook; runs are depth ≥ 1."""

    session: object | None = None
    depth: int = 0
    options: RunOptions = field(default_factory=RunOptions)
    budget: object | None = None
    run: RunTracker | None = None
    interactive: bool = False
    protected: dict[str, object] = field(default_factory=dict)
    hidden: object = field(default_factory=set)
    """Names SHOW_VARS leaves out besides the preloaded ones (the shell's `user_ns_hidden`)."""
