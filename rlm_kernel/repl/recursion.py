"""The helpers that start the root loop: `rlm_query` (a sub-RLM), `rlm_query_batched` (several at once) and
`rlm_run` (a run from a person's cell).

The REPL never imports the root loop: it reaches it as `ReplState.root_loop`, handed in by the shell and by
each run. Errors are translated by `repl.translate.translated`.
"""

from __future__ import annotations

import time

from rlm_kernel import llm
from rlm_kernel.errors import RLMError
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.child_calls import preview, record, sees_context
from rlm_kernel.repl.errors import QueryBatchError, QueryError, ReplError
from rlm_kernel.repl.loading import context_source
from rlm_kernel.repl.queries import llm_query, llm_query_batched, refuse_if_finished
from rlm_kernel.repl.state import ChildCall, ReplState, RootLoop, Usage
from rlm_kernel.repl.subtask import sub_question
from rlm_kernel.repl.translate import budget_hit, interrupted, translated
from rlm_kernel.sandbox.coerce import CoercionError, exact_list_of_str, exact_str, optional_str, plain_data
from rlm_kernel.sandbox.origin import require_person_call

__all__ = ["rlm_query", "rlm_query_batched", "rlm_run", "root_loop"]


def root_loop(state: ReplState, what: str, error: type[ReplError] = ReplError) -> RootLoop:
    """The root loop handed to this namespace, or a clear `error` naming the helper that needs it."""
    if state.root_loop is None:
        raise error(f"{what}: no root loop in this namespace (preload.install was given none)") from None
    return state.root_loop


def _best_effort(value: object, helper: str) -> bool | None:
    if value is not None and value is not True and value is not False:
        raise CoercionError(f"{helper}: best_effort must be True, False or None")
    return value  # type: ignore[return-value]


def _at_max_depth(state: ReplState) -> bool:
    return max(state.depth, 0) + 1 > state.options.max_depth


def _child_steps(state: ReplState, prompt: str, model: str | None, best_effort: bool | None):  # -> RunSteps
    run_rlm_steps = root_loop(state, "rlm_query").run_rlm_steps
    depth = max(state.depth, 0) + 1
    # a sub-RLM answers in text with the default prompt; tools carry on, or `sub_tools` (rootloop/tools)
    sub_tools = state.options.sub_tools
    options = state.options.with_(
        shared=False,
        budget_usd=None,
        returns=None,
        system_prompt=None,
        system_prompt_extra=None,
        tools=state.options.tools if sub_tools is None else sub_tools,
    )
    if best_effort is not None:
        options = options.with_(best_effort=best_effort)
    if model:
        options = options.with_(model=model)
    return run_rlm_steps(
        sub_question(prompt),
        ctxmod.load(prompt, kind="text"),
        options=options,
        depth=depth,
        session=state.session,
        parent_budget=state.budget,
    )


def _settle_child(
    state: ReplState, prompt: str, model: str | None, result: object, seconds: float
) -> tuple[ChildCall, str | None, ReplError | KeyboardInterrupt | None]:
    """A finished sub-RLM as a child call (with its whole run), its answer, and the error it ends with (for
    the caller to record and raise: a batch records its calls in input order, whatever order they end in)."""
    raw = getattr(result, "answer", None)
    answer = None if raw is None else str(raw)
    termination = getattr(result, "termination", "error")
    message = getattr(result, "message", "")
    call = ChildCall(
        "rlm_query",
        preview(prompt),
        answer is not None,
        response_preview=preview(answer or ""),
        model=getattr(result, "model", None) or model,
        usage=getattr(result, "usage", Usage()),
        seconds=seconds,
        saw_context=sees_context(state, prompt),
        prompt=prompt,
        response=answer or "",
        run=result.tree() if hasattr(result, "tree") else None,  # type: ignore[union-attr]
        error=None if answer is not None else f"{termination}: {message}",
        answer_kind=getattr(result, "answer_kind", None),
    )
    if termination == "interrupted":
        return call, answer, interrupted(state)
    if answer is None:
        if termination == "budget":
            return call, None, budget_hit(state, message)
        reason = f"the sub-RLM ended without an answer ({termination}: {message})"
        return call, None, QueryError(f"rlm_query failed: {reason}")
    return call, answer, None


def rlm_query(
    state: ReplState, ns: dict, prompt: str, model: str | None = None, best_effort: bool | None = None
) -> str:
    """Hand a sub-problem to a recursive sub-RLM whose `context` is `prompt`; returns its final answer.

    rlm_query(prompt, model=None, best_effort=None) -> str
    The sub-RLM runs the same root loop one level deeper in its own sandboxed namespace. At the maximum
    depth (default 2, option max_depth) it degrades to llm_query(prompt, model). A sub-RLM that stops
    without FINAL returns its best-effort answer (marked in the trajectory) unless best_effort=False,
    when it raises QueryError (returns "Error: <reason>" in model-written code with the setting
    errors_in_model_code=string).
    """
    refuse_if_finished(state, "rlm_query")
    with translated(state, "rlm_query") as call:
        prompt = exact_str(prompt, "rlm_query: the prompt")
        model = optional_str(model, "rlm_query: model")
        best_effort = _best_effort(best_effort, "rlm_query")
        if _at_max_depth(state):
            return llm_query(state, ns, prompt, model=model)
        loop = root_loop(state, "rlm_query", QueryError)
        started = time.monotonic()
        call.on_failure = lambda err: record(
            state, ChildCall("rlm_query", preview(prompt), False, error=str(err), model=model, prompt=prompt)
        )
        result = loop.drive(_child_steps(state, prompt, model, best_effort))
        call.on_failure = None
        child, answer, error = _settle_child(state, prompt, model, result, time.monotonic() - started)
        record(state, child)
        if error is not None:
            raise error
        call.value = answer
    return call.value


def rlm_query_batched(
    state: ReplState, ns: dict, prompts: list[str], model: str | None = None, best_effort: bool | None = None
) -> list[str]:
    """Run one sub-RLM per prompt, several at once; returns their answers in input order.

    rlm_query_batched(prompts, model=None, best_effort=None) -> list[str]
    Up to `subrun_concurrency` sub-RLMs (setting, default 4) run at once: their model calls overlap,
    also those their code blocks make (a block runs while the others wait for models). At the maximum
    depth this is llm_query_batched. Failures surface like llm_query_batched: QueryBatchError with
    `.results` (None where failed) and `.errors` {index: reason}, after every prompt has been tried (or,
    in model-written code with the setting errors_in_model_code=string, "Error: <reason>" in the failed
    items' slots).
    """
    refuse_if_finished(state, "rlm_query_batched")
    with translated(state, "rlm_query_batched", batch="sub-RLMs") as call:
        items = exact_list_of_str(prompts, "rlm_query_batched: prompts")
        model = optional_str(model, "rlm_query_batched: model")
        best_effort = _best_effort(best_effort, "rlm_query_batched")
        if _at_max_depth(state):
            return llm_query_batched(state, ns, items, model=model)
        if not items:
            return []
        call.items = len(items)
        loop = root_loop(state, "rlm_query_batched", QueryError)
        results, errors = _run_children(state, loop, items, model, best_effort)
        if errors:
            raise QueryBatchError.of(results, errors, "sub-RLMs")
        call.value = [r for r in results if r is not None]
    return call.value


def _run_children(
    state: ReplState, loop: RootLoop, items: list[str], model: str | None, best_effort: bool | None
) -> tuple[list[str | None], dict[int, str]]:
    """Run one sub-RLM per item as one fan-out (their own calls and fan-outs nest under it); returns the
    answers (None where one failed) and the failures' reasons, and records each child call in input order."""
    results: list[str | None] = [None] * len(items)
    errors: dict[int, str] = {}
    calls: dict[int, ChildCall] = {}  # recorded in input order, whatever order the runs end in
    events = llm.events
    label = f"{len(items)} sub-RLMs, first: {preview(items[0])}"
    depth = int(getattr(state.budget, "depth", 0) or 0)
    with events.BatchEvents(len(items), label=label, depth=depth, kind="rlm") as batch:

        def make(i: int):  # noqa: ANN202 - RunSteps
            def steps():  # noqa: ANN202 - the sub-RLM inside this fan-out's item
                with batch.inside():
                    return (yield from _child_steps(state, items[i], model, best_effort))

            return steps

        running: set[int] = set()

        def on_start(i: int) -> None:
            running.add(i)
            batch.start(i)

        def on_end(i: int, result: object, error: BaseException | None, seconds: float) -> bool:
            running.discard(i)
            if error is not None:
                if not isinstance(error, RLMError):
                    batch.fail(i, f"{type(error).__name__}: {error}")
                    raise error
                calls[i] = ChildCall("rlm_query", preview(items[i]), False, error=str(error), prompt=items[i])
                errors[i] = f"rlm_query failed: {error}"
                batch.fail(i, errors[i])
                return True
            calls[i], results[i], failure = _settle_child(state, items[i], model, result, seconds)
            if isinstance(failure, KeyboardInterrupt):  # the driver cancels the others and re-raises
                batch.fail(i, events.CANCELLED)
                raise failure
            if failure is not None:
                errors[i] = str(failure)
                batch.fail(i, str(failure))
                return not (state.run is not None and state.run.budget_error)
            batch.finish(i)
            return True

        try:
            not_started = loop.run_concurrently(
                [make(i) for i in range(len(items))],
                loop.subrun_concurrency(),
                on_start,
                on_end,
                session=state.session,
            )
        except BaseException:  # an interrupt or time limit: the runs still going were cancelled
            for i in sorted(running):
                batch.fail(i, events.CANCELLED)
            raise
        finally:
            for i in sorted(calls):
                record(state, calls[i])
        for j in not_started:
            errors[j] = "not started: the budget is exhausted"
    return results, errors


def rlm_run(state: ReplState, ns: dict, question: str, context: object = None, **options: object):
    """Run the autonomous root loop on `question`; returns an RLMResult.

    rlm_run(question, context=None, model=None, child_model=None, max_iterations=20, max_depth=2,
            budget_usd=None, shared=False, max_no_code_turns=3, output_chars=4000, best_effort=True,
            tools=None, sub_tools=None, returns=None, system_prompt=None, system_prompt_extra=None,
            continue_from=None) -> RLMResult
    tools: {name: tool} the root may use (a notebook function, a callable object of a notebook class, or
    plain data; an entry may be (tool, "description")); sub_tools: the same for sub-RLMs (default: tools;
    {} for none); returns: the answer's type (int,
    float, bool, str, list[...], dict[...] or a notebook dataclass); continue_from: an earlier result to
    ask a follow-up in its conversation, namespace and budget.
    `context` defaults to this namespace's context. The result has answer, iterations, calls, tokens,
    cost, termination, message, trajectory and namespace; export with result.save("run.ipynb") and
    result.to_jsonl(path).
    """
    refuse_if_finished(state, "rlm_run")
    require_person_call(
        "rlm_run (use rlm_query for a sub-problem)", "rlm_run", state.protected.get("rlm_run")
    )
    loop = root_loop(state, "rlm_run")
    if type(question) is not str or not question.strip():
        raise ReplError("rlm_run: the question must be a non-empty str") from None
    bad_argument = (TypeError, ValueError)  # the options' own checks name what was wrong
    with translated(state, "rlm_run", error=_rlm_run_error, arguments=bad_argument, model_call=False):
        named = {exact_str(k, "rlm_run option"): v for k, v in options.items()}
        named, special, previous = loop.split_args(named, set(state.protected))
        named = {k: plain_data(v, f"rlm_run: {k}") for k, v in named.items()}
        opts = state.options.with_(**named, **special).check()
        if context is not None:
            context = context_source(context)
    return loop.run_from_namespace(state, ns, question, context, opts, continue_from=previous)


def _rlm_run_error(message: str) -> ReplError:
    return ReplError(f"rlm_run: {message}")
