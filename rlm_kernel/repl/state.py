"""Per-namespace REPL state the helpers close over, and what they share with the root loop: options, records.

Never handed to sandboxed code: helpers hold it in their closures only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from rlm_kernel.repl.gate import FinalGate

__all__ = ["ChildCall", "ReplState", "RootLoop", "RunOptions", "RunTracker", "Usage"]


@dataclass
class Usage:
    """Calls, tokens and dollars spent."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class ChildCall:
    """One helper call made by a block: `kind` is the helper's name (llm_query, rlm_query_batched, …)."""

    kind: str
    prompt_preview: str
    ok: bool
    items: int = 1
    failed: int = 0
    response_preview: str = ""
    error: str | None = None
    model: str | None = None
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    saw_context: bool = False
    """Whether the call's prompt contained part of the run's `context` (what the FINAL gate counts)."""


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
        return self


@dataclass
class RunTracker:
    """What the helpers report to the root loop while one run is in progress."""

    successes: int = 0
    calls: list[ChildCall] = field(default_factory=list)
    final: str | None = None
    final_set: bool = False
    rejections: list[str] = field(default_factory=list)
    budget_error: str | None = None
    interrupted: bool = False
    gate: FinalGate = field(default_factory=FinalGate)

    def drain(self) -> tuple[list[ChildCall], list[str]]:
        calls, rejections = self.calls, self.rejections
        self.calls, self.rejections = [], []
        return calls, rejections


@dataclass(frozen=True)
class RootLoop:
    """The root loop as the helpers start it (rlm_query, rlm_run, %%rlm): handed to them, never imported.

    The root-loop package builds one (`rlm_kernel.rlm.loop.ROOT_LOOP`); the shell passes it to
    `preload.install`, and each run passes it on to the namespaces it creates.
    """

    run_rlm: Callable[..., object]
    """`run_rlm(question, loaded, *, options, depth, session, parent_budget, ...)` -> RLMResult."""
    run_from_namespace: Callable[..., object]
    """`run_from_namespace(state, ns, question, context, options)` -> RLMResult."""


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
    root_loop: RootLoop | None = None
    """What `rlm_query` / `rlm_run` / `%%rlm` start; None where no root loop was handed in."""
