"""Per-namespace REPL state the helpers close over, and what they share with the root loop: options, records.

Never handed to sandboxed code: helpers hold it in their closures only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rlm_kernel.repl.evidence import Seen
from rlm_kernel.repl.gate import FinalGate

__all__ = ["ChildCall", "LibraryCalls", "ReplState", "RootLoop", "RunOptions", "RunTracker", "Usage"]

_MAX_SEEN = 100_000  # items of one library helper kept as possible evidence (references, not copies)


@dataclass
class Usage:
    """Calls, tokens and dollars spent; `cache_hits` are answers replayed from the cache (not in `calls`)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd
        self.cache_hits += other.cache_hits

    @classmethod
    def of(cls, completions: list) -> Usage:
        """The usage of some `Completion`s (None entries skipped): a cached one counts as a cache hit."""
        u = cls()
        for c in completions:
            if c is None:
                continue
            if getattr(c, "cached", False):
                u.cache_hits += 1
            else:
                u.calls += 1
            u.input_tokens += int(getattr(c, "input_tokens", 0) or 0)
            u.output_tokens += int(getattr(c, "output_tokens", 0) or 0)
            u.cost_usd += float(getattr(c, "cost_usd", 0.0) or 0.0)
        return u

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
    prompt: str = ""
    """The full prompt (the first one for a batch)."""
    response: str = ""
    """The full answer (the first one for a batch)."""
    run: dict | None = None
    """A sub-RLM's own run (`RLMResult.tree()`): its turns, calls and nested runs."""
    cache_keys: list[str] = field(default_factory=list)
    answer_kind: str | None = None
    """For a sub-RLM: "final" or "best_effort" (it stopped without FINAL; rlm/best_effort)."""


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
    """((name, tool, description), ...) bound into the run's namespace, listed in the prompt
    (rootloop/tools)."""
    sub_tools: tuple | None = None
    """What sub-RLMs get instead of `tools` (the reference's custom_sub_tools); None: the same tools."""
    returns: object = None
    """The answer's type (rlm/answer_types), or None for text."""
    cite: bool = False
    """Ask the root for citations (`%%rlm --cite`; repl.citations)."""

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
        if type(self.cite) is not bool:
            raise ValueError(f"cite must be True or False, got {self.cite!r}")
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
    seen: list[tuple[int, tuple[str, ...], str]] = field(default_factory=list)
    """The answered items with their prompts (when the helper passed them): possible evidence."""

    def note_llm_calls(
        self,
        kind: str,
        label: str,
        completions: list[Any],
        errors: dict[int, str],
        seconds: float,
        prompts: list[str] | None = None,
    ) -> None:
        before = self.items  # an item is the helper's Nth model call (map parts first, then reduce steps)
        self.items += max(len(completions), 1)
        for number, c in enumerate(completions, start=1):
            if c is None:
                continue
            if prompts is not None and number <= len(prompts) and len(self.seen) < _MAX_SEEN:
                self.seen.append((before + number, (prompts[number - 1],), str(getattr(c, "text", ""))))
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
    citations: list[dict] = field(default_factory=list)
    """The accepted answer's verified citations (repl.citations), with their locations."""
    cite_feedback_given: bool = False
    seen: list[Seen] = field(default_factory=list)
    """The sub-call items whose prompts held part of `context` (prompts and answers by reference): what
    `repl.evidence` picks an answer's evidence from when it has no citations."""

    def note_llm_calls(
        self,
        kind: str,
        label: str,
        completions: list[Any],
        errors: dict[int, str],
        seconds: float,
        prompts: list[str] | None = None,
    ) -> None:
        """Record model calls made in the run by library code outside the helpers: one trajectory entry
        with their usage; a budget refusal among them ends the run as the helpers' do."""
        calls = LibraryCalls()
        calls.note_llm_calls(kind, label, completions, errors, seconds, prompts)
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
        if calls.seen:
            self.seen.append(Seen(entry, calls.seen))
        if good:
            self.successes += 1
            self.gate.context_calls += 1
        if calls.budget_error is not None and self.budget_error is None:
            self.budget_error = calls.budget_error

    def drain(self) -> tuple[list[ChildCall], list[str]]:
        calls, rejections = self.calls, self.rejections
        self.calls, self.rejections = [], []
        return calls, rejections


@dataclass(frozen=True)
class RootLoop:
    """The root loop as the helpers start it (rlm_query, rlm_run, %%rlm): handed to them, never imported.

    The root-loop package builds one (`rlm_kernel.rootloop.driver.ROOT_LOOP`); the shell passes it to
    `preload.install`, and each run passes it on to the namespaces it creates.
    """

    run_rlm: Callable[..., object]
    """`run_rlm(question, loaded, *, options, depth, session, parent_budget, ...)` -> RLMResult."""
    run_from_namespace: Callable[..., object]
    """`run_from_namespace(state, ns, question, context, options)` -> RLMResult."""
    run_rlm_steps: Callable[..., Any]
    """`run_rlm` as steps (yields root requests, returns the RLMResult; see `rlm.steps`)."""
    drive: Callable[[Any], object]
    """Runs steps to the end, one root call at a time."""
    run_concurrently: Callable[..., list[int]]
    """`run_concurrently(makers, limit, on_start, on_end, session=)`: runs whose model calls overlap."""
    subrun_concurrency: Callable[[], int]
    """How many sub-RLMs `rlm_query_batched` runs at once (the `subrun_concurrency` setting)."""
    split_args: Callable[..., tuple]
    """`split_args(options, reserved)` -> (plain options, special options, run to continue) for `rlm_run`."""
    magic_args: Callable[..., tuple]
    """`magic_args(parsed line, ns, reserved)` -> (options, run to continue) for `%%rlm`."""


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
    finished: bool = False
    """A run that ended (not a `--shared` one): its helpers, still in `rlm_result.namespace`, make no model
    calls — they would spend its budget beside the running one's (a follow-up run reopens it)."""

    def mark_shown(self, value: object) -> object:
        """`value`, marked in the session as shown already (the display hook and the block runner skip it)."""
        shown = getattr(self.session, "shown", None)
        return value if shown is None else shown.mark(value)
