"""Starting a root-loop run: its namespace, budget, tracker and displays, then its RLMResult; `ROOT_LOOP`.

`run_rlm_steps` sets a run up (a fresh sandboxed namespace, the `--shared` notebook one, or a continued
run's), lets `rootloop.turn_loop.TurnLoop` take the turns and `best_effort` try a last answer, and returns
the RLMResult; `ROOT_LOOP` is the root loop as the REPL helpers get it.
"""

from __future__ import annotations

from rlm_kernel.callscope import call_scope
from rlm_kernel.errors import RLMError
from rlm_kernel.output import own
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl import evidence as evidencemod
from rlm_kernel.repl import found_citations
from rlm_kernel.repl.errors import ReplError
from rlm_kernel.repl.gate import stated_facts
from rlm_kernel.repl.state import ReplState, RootLoop, RunOptions, RunTracker
from rlm_kernel.rootloop import (
    answer_dict,
    best_effort,
    bindings,
    continuation,
    run_args,
    subruns,
    tools,
)
from rlm_kernel.rootloop.display import LiveDisplay, RunBudgetDisplay
from rlm_kernel.rootloop.steps import RunSteps, drive
from rlm_kernel.rootloop.trajectory import RLMResult, Usage
from rlm_kernel.rootloop.turn_loop import TurnLoop
from rlm_kernel.sandbox import made
from rlm_kernel.sandbox.limits import uninterruptible

__all__ = ["ROOT_LOOP", "run_from_namespace", "run_rlm", "run_rlm_steps"]


def _make_budget(parent: object | None, budget_usd: float | None, depth: int = 1) -> object | None:
    from rlm_kernel import llm

    base = parent if parent is not None else llm.get_session_budget()
    limits: dict[str, object] = {"max_usd": budget_usd} if budget_usd else {}
    limits["label"] = "rlm run" if depth <= 1 else f"sub-RLM (depth {depth})"
    return base.child(**limits) if base is not None else llm.Budget(**limits)


def run_rlm(question: str, loaded: ctxmod.LoadedContext, **kwargs: object) -> RLMResult:
    """Run the root loop on `question` over `loaded`, one root call at a time (see `run_rlm_steps`)."""
    return drive(run_rlm_steps(question, loaded, **kwargs))  # type: ignore[arg-type]


def run_rlm_steps(
    question: str,
    loaded: ctxmod.LoadedContext,
    *,
    options: RunOptions,
    depth: int = 1,
    session: object | None = None,
    parent_budget: object | None = None,
    ns: dict | None = None,
    state: ReplState | None = None,
    live: bool = False,
    continue_from: RLMResult | None = None,
) -> RunSteps:
    """Run the root loop on `question` over `loaded`, as steps (yields root requests, returns the RLMResult).

    With `ns`/`state` given (the --shared mode) the run uses that namespace and its helpers; otherwise it
    gets a fresh sandboxed namespace whose `context` is `loaded`. The run's budget is a child of
    `parent_budget` (or of the session budget) limited to `options.budget_usd`. With `continue_from`, the run
    is a follow-up in that run's namespace, conversation and budget (rlm/continuation).
    """
    from rlm_kernel.repl import preload
    from rlm_kernel.repl.loading import set_context
    from rlm_kernel.sandbox import SandboxSession, new_namespace

    options.check()
    earlier = continuation.session_of(continue_from) if continue_from is not None else None
    if earlier is not None:
        budget, ns, state = earlier.budget, earlier.ns, earlier.state
        if not earlier.shared:
            loaded = earlier.loaded
            preload.track(ns, state)
    else:
        try:
            budget = _make_budget(parent_budget, options.budget_usd, depth)
        except RLMError as err:
            raise ReplError(f"cannot set up the run's budget: {err}") from None
    tracker = RunTracker()
    if earlier is not None and earlier.gate is not None:
        tracker.gate = earlier.gate  # the conversation's evidence carries on (rlm/continuation)
    shared = ns is not None and state is not None and (earlier is None or earlier.shared)
    if shared:
        try:
            tools.refuse_clobbering(ns, options.tools)
        except tools.ToolError as err:
            raise ReplError(str(err)) from None
    if earlier is not None and not earlier.shared:
        saved = None
        state.depth, state.budget, state.run, state.options = depth, budget, tracker, options
        state.finished = False  # a follow-up reopens the finished run's helpers
    elif ns is not None and state is not None:
        saved = (state.depth, state.budget, state.run, state.options)
        state.depth, state.budget, state.run, state.options = depth, budget, tracker, options
        if loaded is not state.protected.get("__loaded_context__"):
            set_context(state, ns, loaded)
    else:
        saved = None
        if session is None:
            session = SandboxSession()
        ns = new_namespace(session)
        state = ReplState(
            session=session, depth=depth, options=options, budget=budget, run=tracker, root_loop=ROOT_LOOP
        )
        preload.populate(ns, state, loaded)
    tools.install(ns, None if shared else state.protected, options.tools)
    # a tool's result is evidence, and so are a --shared notebook's own variables (the author's data)
    tracker.gate.flow.sources.update(tool[0] for tool in options.tools)
    if shared:
        tracker.gate.flow.sources.update(n for n in ns if isinstance(n, str) and not n.startswith("_"))
    if earlier is None:
        answer_dict.install(ns, shared)
    else:
        answer_dict.renew(ns, earlier.shared)
    display = LiveDisplay(question) if live else None
    shown_budget = RunBudgetDisplay(budget) if live else None
    run = TurnLoop(question, loaded, ns, state, options, display, continue_from)
    if shared:
        run.bindings = bindings.Bindings(state.protected)  # what model code binds in the notebook: listed
    tracker.gate.question = question
    tracker.gate.stated = stated_facts(loaded.value, dict(loaded.files))
    tracker.gate.load(loaded.value if isinstance(loaded.value, str) else "", dict(loaded.files))
    if not tracker.gate.source_for(loaded.value).strip():
        tracker.gate.code_read_context = True  # nothing loaded: every block works on the question itself
        tracker.gate.no_context = True
    try:
        # calls made in the run without an explicit budget (map_reduce, find_relevant) are charged to it
        # and noted in its trajectory: the call scope carries both to the LLM layer
        with call_scope(budget=budget, run=tracker):
            answer, reason, message = yield from run.run()
            kind = "final" if answer is not None else None
            if answer is None:
                answer, kind, message = yield from best_effort.attempt(run, reason, message)
    finally:
        if run.bindings is not None:
            run.bindings.finish(ns)  # what model code left in the notebook is model-made (framed when shown)
        if live and run.bindings is not None and run.bindings.done:  # also when the run failed
            print(bindings.note(run.bindings.done))  # one line under the run, in the person's cell
        if saved is not None:
            state.depth, state.budget, state.run, state.options = saved
        else:
            preload.forget(ns)
            state.finished = True  # its helpers stay in rlm_result.namespace: they make no more calls
            made.record_namespace(ns, state.protected)  # what it left there is model-made (framed when shown)
    usage = Usage()
    for turn in run.turns:
        usage.add(turn.usage)
    result = RLMResult(
        question,
        answer,
        reason,
        message,
        run.turns,
        ns,
        usage,
        depth=depth,
        model=options.model or run.model,
        answer_kind=kind,
        model_bound=dict(run.bindings.done) if shared else {},
        citations=_citations(tracker, kind, answer, loaded, options),
        _history=continuation.transcript(run.prior, run.first_message(), run),
    )
    result.evidence = _evidence(tracker, result, loaded, run.turns)
    # its display is the kernel's run viewer while its record is as the run left it (a copy a cell makes
    # of it, or the same object after a cell edited its citations or trajectory, is not: output/trust.py)
    own(result, result.records)
    if depth == 1 and (result.citations or result.evidence):
        from rlm_kernel.llm.events import current_owner
        from rlm_kernel.rootloop.provenance import ledger

        ledger.cited(current_owner(), result.citations, result.evidence)
    continuation.add_history(ns, state, result.history)  # history_N for follow-ups and shared runs
    continuation.remember(result, continuation.Session(ns, state, budget, shared, loaded, tracker.gate))
    if display is not None:
        display.finish(result)
    if shown_budget is not None:
        shown_budget.finish()
    return result


def run_from_namespace(
    state: ReplState,
    ns: dict,
    question: str,
    context: object,
    options: RunOptions,
    live: bool | None = None,
    continue_from: RLMResult | None = None,
) -> RLMResult:
    """`rlm_run` / `%%rlm` from a namespace: its context unless `context` is given, one level deeper; with
    `continue_from`, a follow-up in that run's namespace (and `context` must not be given)."""
    if continue_from is not None:
        if context is not None:
            raise ReplError(
                "rlm_run: a follow-up (continue_from=) keeps the earlier run's context; drop context="
            )
        earlier = continuation.session_of(continue_from)
        if earlier is None:
            raise ReplError("continue_from: this result cannot be continued")
        loaded = earlier.loaded if not earlier.shared else state.protected.get("__loaded_context__")
        return run_rlm(
            question,
            loaded
            if isinstance(loaded, ctxmod.LoadedContext)
            else ctxmod.LoadedContext("", "text", "nothing"),
            options=options,
            depth=max(state.depth, 0) + 1,
            live=state.interactive if live is None else live,
            continue_from=continue_from,
        )
    if context is None:
        loaded = state.protected.get("__loaded_context__")
        if not isinstance(loaded, ctxmod.LoadedContext):
            loaded = ctxmod.LoadedContext("", "text", "nothing loaded")
    elif isinstance(context, ctxmod.LoadedContext):
        loaded = context
    else:
        loaded = ctxmod.load(context)
    shared = options.shared
    return run_rlm(
        question,
        loaded,
        options=options,
        depth=max(state.depth, 0) + 1,
        session=state.session,
        parent_budget=state.budget,
        ns=ns if shared else None,
        state=state if shared else None,
        live=state.interactive if live is None else live,
    )


ROOT_LOOP = RootLoop(
    run_rlm=run_rlm,
    run_from_namespace=run_from_namespace,
    run_rlm_steps=run_rlm_steps,
    drive=drive,
    run_concurrently=subruns.run_concurrently,
    subrun_concurrency=subruns.concurrency,
    split_args=run_args.split,
    magic_args=run_args.from_magic,
)
"""The root loop as the REPL helpers get it (the shell hands it to `preload.install`)."""


def _citations(tracker: RunTracker, kind: str, answer: object, loaded: object, options: RunOptions) -> list:
    """The verified citations of the run's answer: a final answer's; a best-effort answer under --cite gets
    the printed lines of the context that back it, found by the kernel (so a person can check even the
    answer the run could not ground), never the model's unchecked ones."""
    if kind == "final":
        return list(tracker.citations)
    if kind == "best_effort" and options.cite and isinstance(answer, str):
        return found_citations.for_run(answer, tracker.gate, loaded)
    return []


def _evidence(tracker: RunTracker, result: RLMResult, loaded: object, turns: list) -> list:
    """An accepted answer without citations: the spans of `context` its sub-calls saw that led to it
    (`repl.evidence`). The sub-calls' prompts kept for this are let go either way."""
    seen, tracker.seen = tracker.seen, []
    text = result.answer_text
    if result.answer_kind != "final" or result.citations or text is None:
        return []
    return evidencemod.for_run(text, result.question, seen, loaded, turns)


# As TurnLoop.run: the run's set-up and the making of its result run with the cell's frame below them; a
# time limit that fires again there only cancels (the result says the run ended at its time limit).
uninterruptible(run_rlm_steps)
