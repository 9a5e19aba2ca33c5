"""The query helpers: `llm_query` (one question to a sub-model) and `llm_query_batched` (many at once).

Module-level functions of the namespace's `ReplState` (bound by `repl.helpers.build_helpers`); their errors
are translated by `repl.translate.translated`.
"""

from __future__ import annotations

import time

from rlm_kernel import llm
from rlm_kernel.repl.child_calls import preview, record, sees_context
from rlm_kernel.repl.errors import ReplError
from rlm_kernel.repl.state import ChildCall, ReplState, Usage
from rlm_kernel.repl.translate import translated
from rlm_kernel.sandbox.coerce import exact_int, exact_list_of_str, exact_str, optional_str

__all__ = ["llm_query", "llm_query_batched", "refuse_if_finished"]


def refuse_if_finished(state: ReplState, name: str) -> None:
    """Refuse a model call through the helpers of a run that ended (`rlm_result.namespace['llm_query']`):
    they are bound to that run's budget and trajectory, so a cell — or the model of a `--shared` run, which
    sees the notebook's results — would spend beside the running budget and out of its record."""
    if state.finished:
        raise ReplError(
            f"{name}: this helper belongs to a finished run (found in a result's namespace); call the "
            f"notebook's own {name}, or continue that run with rlm_run(question, continue_from=result)"
        ) from None


def llm_query(
    state: ReplState,
    ns: dict,
    prompt: str,
    model: str | None = None,
    max_tokens: int | None = None,
    system: str | None = None,
) -> str:
    """Ask a sub-model one question; returns its answer text.

    llm_query(prompt, model=None, max_tokens=None, system=None) -> str
    `model`: a tier (fast, balanced, powerful, auto) or a model name; default: the run's child model.
    Raises QueryError with the reason when the call fails (or the budget is exhausted); in model-written
    code with the setting errors_in_model_code=string, a failed call returns "Error: <reason>" instead.
    """
    refuse_if_finished(state, "llm_query")
    with translated(state, "llm_query") as call:
        # exact built-ins only: these values travel to the LLM thread
        prompt = exact_str(prompt, "llm_query: the prompt")
        model = optional_str(model, "llm_query: model")
        max_tokens = exact_int(max_tokens, "llm_query: max_tokens", allow_none=True)
        system = optional_str(system, "llm_query: system")
        chosen = model or state.options.child_model
        started = time.monotonic()
        call.on_failure = lambda err: record(
            state, ChildCall("llm_query", preview(prompt), False, error=str(err), model=chosen)
        )
        completion = llm.get_client().complete(
            prompt, model=chosen, max_tokens=max_tokens, system=system, role="map", budget=state.budget
        )
        text = str(completion.text)
        record(
            state,
            ChildCall(
                "llm_query",
                preview(prompt),
                True,
                response_preview=preview(text),
                model=completion.model,
                usage=Usage.of([completion]),
                seconds=time.monotonic() - started,
                saw_context=sees_context(state, prompt, system),
                prompt=prompt,
                response=text,
            ),
            [(1, (prompt, system) if system else (prompt,), text)],
        )
        call.value = text
    return call.value


def llm_query_batched(state: ReplState, ns: dict, prompts: list[str], model: str | None = None) -> list[str]:
    """Ask a sub-model many independent questions at once; returns the answers in input order.

    llm_query_batched(prompts, model=None) -> list[str]
    If some prompts fail, the others are kept: it raises QueryBatchError whose `.results` is the full list
    (None where an item failed) and `.errors` maps each failed index to its reason. To keep going:
        try: answers = llm_query_batched(ps)
        except QueryBatchError as e: answers = e.results
    In model-written code with the setting errors_in_model_code=string it raises nothing for failed items:
    each failed item's slot holds "Error: <reason>", the others their answers.
    """
    refuse_if_finished(state, "llm_query_batched")
    item_text = "llm_query_batched item {i} failed: {reason}"  # the reason alone does not name the call
    with translated(state, "llm_query_batched", batch="prompts", item_text=item_text) as call:
        items = exact_list_of_str(prompts, "llm_query_batched: prompts")
        model = optional_str(model, "llm_query_batched: model")
        if not items:
            return []
        call.items = len(items)
        chosen = model or state.options.child_model
        started = time.monotonic()
        label = f"{len(items)} prompts, first: {preview(items[0])}"

        def failed(err: Exception) -> None:
            if isinstance(err, llm.BatchError):  # some items failed: the others' usage counts
                failures = err.errors
                record(
                    state,
                    ChildCall(
                        "llm_query_batched",
                        label,
                        False,
                        items=len(items),
                        failed=len(failures),
                        model=chosen,
                        error=f"{len(failures)} failed",
                        usage=Usage.of(err.results),
                        seconds=time.monotonic() - started,
                        saw_context=sees_context(
                            state, *(p for i, p in enumerate(items) if i not in failures)
                        ),
                    ),
                )
            else:  # the batch as a whole failed
                record(
                    state,
                    ChildCall(
                        "llm_query_batched", label, False, items=len(items), failed=len(items), error=str(err)
                    ),
                )

        call.on_failure = failed
        completions = llm.get_client().complete_batch(
            items, model=chosen, role="map", budget=state.budget, batch_label=label
        )
        texts = [str(c.text) for c in completions]
        record(
            state,
            ChildCall(
                "llm_query_batched",
                label,
                True,
                items=len(items),
                response_preview=preview(texts[0]),
                model=chosen or completions[0].model,
                usage=Usage.of(completions),
                seconds=time.monotonic() - started,
                saw_context=sees_context(state, *items),
                prompt=items[0],
                response=texts[0],
            ),
            [(i, (p,), t) for i, (p, t) in enumerate(zip(items, texts, strict=False), start=1)],
        )
        if state.run is not None and state.run.calls and state.run.calls[-1].saw_context:
            state.run.gate.hear("\n".join(texts[1:]))  # the first is heard by `record`
        call.value = texts
    return call.value
