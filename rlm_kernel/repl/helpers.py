"""The helpers preloaded into every namespace: model queries, sub-RLMs, variables, FINAL, context loading.

Plain closures over a `ReplState`: nothing reachable from them leads to a module, client or key;
every error they raise is a text-only `ReplError` raised `from None`.
"""

from __future__ import annotations

import html
import inspect
import keyword
import time
from collections.abc import Callable

from rlm_kernel import llm
from rlm_kernel.errors import RLMError
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl import corpus as corpusmod
from rlm_kernel.repl.errors import ContextError, QueryBatchError, QueryError, ReplError
from rlm_kernel.repl.gate import rejection, shares_text
from rlm_kernel.repl.state import ChildCall, ReplState, RootLoop, Usage
from rlm_kernel.repl.subtask import sub_question
from rlm_kernel.sandbox import shown
from rlm_kernel.sandbox.coerce import (
    CoercionError,
    exact_float,
    exact_int,
    exact_list_of_str,
    exact_str,
    optional_str,
    plain_data,
)
from rlm_kernel.sandbox.origin import refuse_in_model_code

__all__ = ["CONTEXT_NAMES", "HELPER_NAMES", "build_helpers", "set_context"]

HELPER_NAMES = (
    "load_context",
    "load_corpus",
    "llm_query",
    "llm_query_batched",
    "rlm_query",
    "rlm_query_batched",
    "SHOW_VARS",
    "repl_set",
    "repl_get",
    "FINAL",
    "FINAL_VAR",
    "rlm_run",
)
CONTEXT_NAMES = ("context", "ctx", "context_files")
_PREVIEW = 200


def root_loop(state: ReplState, what: str) -> RootLoop:
    """The root loop handed to this namespace, or a clear error naming the helper that needs it."""
    if state.root_loop is None:
        raise ReplError(f"{what}: no root loop in this namespace (preload.install was given none)") from None
    return state.root_loop


def _usage(completions: list) -> Usage:
    return Usage.of(completions)


def _default_model(kind: str) -> str | None:
    """The model a call of helper `kind` goes to when none is named (the child tier, or the root's)."""
    try:
        from rlm_kernel import llm
        from rlm_kernel.llm.tiers import resolve_model

        config = llm.get_client().config
        if kind.startswith("rlm_query"):
            root = getattr(config, "root_model", None)
            return root or resolve_model(None, role="synthesis", prompt_tokens=0, config=config)[1]
        return resolve_model(None, role="map", prompt_tokens=0, config=config)[1]
    except Exception:  # noqa: BLE001 - a name for the record only; no provider configured, say so
        return None


def _preview(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "…"


def _check_prompt(prompt: object, helper: str) -> str:
    try:
        return exact_str(prompt, f"{helper}: the prompt")
    except CoercionError as err:
        raise QueryError(str(err)) from None


def _check_prompts(prompts: object, helper: str) -> list[str]:
    try:
        return exact_list_of_str(prompts, f"{helper}: prompts")
    except CoercionError as err:
        raise QueryError(str(err)) from None


def _check_options(helper: str, model: object = None, max_tokens: object = None, system: object = None):
    """Exact-type copies of a query's model / max_tokens / system (they travel to the LLM thread)."""
    try:
        return (
            optional_str(model, f"{helper}: model"),
            exact_int(max_tokens, f"{helper}: max_tokens", allow_none=True),
            optional_str(system, f"{helper}: system"),
        )
    except CoercionError as err:
        raise QueryError(str(err)) from None


def _context_source(source: object) -> object:
    """What `load_context`/`rlm_run` got, as exact built-ins: a path-like object's `__fspath__` runs here
    (in the cell, under its limits) and its result is copied to an exact str; data is deep-copied."""
    import os

    if isinstance(source, os.PathLike) and not issubclass(type(source), str | bytes | list | tuple | dict):
        source = os.fspath(source)
        if issubclass(type(source), bytes):
            raise CoercionError("load_context: a path-like object gave bytes; give it a str path")
    if issubclass(type(source), str):
        return exact_str(source, "load_context: source")
    return plain_data(source, "load_context: source")


def _text_of(answer: object) -> str:
    """FINAL's text: str as is, numbers by str(), anything else by repr() (run here, in the cell)."""
    kind = type(answer)
    if issubclass(kind, str):
        return exact_str(answer, "FINAL")
    if kind in (int, float, bool):
        return str(answer)
    return exact_str(repr(answer), "repr() of the answer")


def set_context(state: ReplState, ns: dict, loaded: ctxmod.LoadedContext) -> None:
    """Bind a loaded context into `ns` (and into the repair snapshot so it survives rebinding)."""
    values = {
        "context": loaded.value,
        "ctx": loaded.value,
        "context_0": loaded.value,
        "context_files": loaded.files,
    }
    ns.update(values)
    state.protected.update(values)
    state.protected["__loaded_context__"] = loaded


def add_context(state: ReplState, ns: dict, loaded: ctxmod.LoadedContext, append: bool) -> None:
    """`load_context`'s binding: the first context as `context`/`ctx`/`context_0`, each appended one as the
    next `context_N`; without `append`, the earlier `context_N` are dropped."""
    count = state.protected.get("__context_count__")
    count = count if isinstance(count, int) else 0
    if append and count:
        name = f"context_{count}"
        ns[name] = state.protected[name] = loaded.value
        state.protected["__context_count__"] = count + 1
        return
    for i in range(1, count):
        ns.pop(f"context_{i}", None)
        state.protected.pop(f"context_{i}", None)
    set_context(state, ns, loaded)
    state.protected["__context_count__"] = 1


def refuse_if_finished(state: ReplState, name: str) -> None:
    """Refuse a model call through the helpers of a run that ended (`rlm_result.namespace['llm_query']`):
    they are bound to that run's budget and trajectory, so a cell — or the model of a `--shared` run, which
    sees the notebook's results — would spend beside the running budget and out of its record."""
    if state.finished:
        raise ReplError(
            f"{name}: this helper belongs to a finished run (found in a result's namespace); call the "
            f"notebook's own {name}, or continue that run with rlm_run(question, continue_from=result)"
        ) from None


def build_helpers(state: ReplState, ns: dict) -> dict[str, Callable]:
    """Create the helper closures for namespace `ns` (not yet bound into it)."""

    def emit(text: str) -> None:
        """Print where the running code's output goes (the root loop's capture, or the cell)."""
        write = getattr(state.session, "write_output", None)
        if callable(write):
            write(text + "\n")
        else:
            print(text)

    def record(call: ChildCall) -> None:
        if not call.ok and call.failed == 0:
            call.failed = call.items
        if call.model is None:  # the trajectory names a model even for a call that never answered
            call.model = _default_model(call.kind)
        if state.run is not None:
            state.run.calls.append(call)
            if call.failed < call.items:
                state.run.successes += 1
                if call.saw_context:
                    state.run.gate.context_calls += 1

    def sees_context(*texts: object) -> bool:
        """Whether any of `texts` contains part of the run's `context` (only asked during a run)."""
        if state.run is None:
            return False
        loaded = state.protected.get("__loaded_context__")
        source = state.run.gate.source_for(getattr(loaded, "value", None))
        if not source.strip():  # nothing loaded: the question is the whole task, any call counts
            return True
        besides = state.run.gate.question
        return any(isinstance(t, str) and shares_text(t, source, besides=besides) for t in texts)

    def interrupted() -> KeyboardInterrupt:
        if state.run is not None:
            state.run.interrupted = True
        return KeyboardInterrupt("interrupted while waiting for a model call")

    def budget_hit(message: str) -> QueryError:
        if state.run is not None:
            state.run.budget_error = message
        return QueryError(f"budget exceeded: {message}")

    def llm_query(
        prompt: str, model: str | None = None, max_tokens: int | None = None, system: str | None = None
    ) -> str:
        """Ask a sub-model one question; returns its answer text.

        llm_query(prompt, model=None, max_tokens=None, system=None) -> str
        `model`: a tier (fast, balanced, powerful, auto) or a model name; default: the run's child model.
        Raises QueryError with the reason when the call fails (or the budget is exhausted).
        """
        refuse_if_finished(state, "llm_query")
        prompt = _check_prompt(prompt, "llm_query")
        model, max_tokens, system = _check_options("llm_query", model, max_tokens, system)
        chosen = model or state.options.child_model
        started = time.monotonic()
        try:
            completion = llm.get_client().complete(
                prompt, model=chosen, max_tokens=max_tokens, system=system, role="map", budget=state.budget
            )
        except KeyboardInterrupt:
            raise interrupted() from None
        except llm.LLMCancelled:
            raise interrupted() from None
        except llm.BudgetExceeded as err:
            record(ChildCall("llm_query", _preview(prompt), False, error=str(err), model=chosen))
            raise budget_hit(str(err)) from None
        except RLMError as err:
            record(ChildCall("llm_query", _preview(prompt), False, error=str(err), model=chosen))
            raise QueryError(f"llm_query failed: {err}") from None
        text = str(completion.text)
        record(
            ChildCall(
                "llm_query",
                _preview(prompt),
                True,
                response_preview=_preview(text),
                model=completion.model,
                usage=_usage([completion]),
                seconds=time.monotonic() - started,
                saw_context=sees_context(prompt, system),
                prompt=prompt,
                response=text,
            )
        )
        return text

    def llm_query_batched(prompts: list[str], model: str | None = None) -> list[str]:
        """Ask a sub-model many independent questions at once; returns the answers in input order.

        llm_query_batched(prompts, model=None) -> list[str]
        If some prompts fail, the others are kept: it raises QueryBatchError whose `.results` is the full list
        (None where an item failed) and `.errors` maps each failed index to its reason. To keep going:
            try: answers = llm_query_batched(ps)
            except QueryBatchError as e: answers = e.results
        """
        refuse_if_finished(state, "llm_query_batched")
        items = _check_prompts(prompts, "llm_query_batched")
        model = _check_options("llm_query_batched", model)[0]
        if not items:
            return []
        chosen = model or state.options.child_model
        started = time.monotonic()
        label = f"{len(items)} prompts, first: {_preview(items[0])}"
        try:
            completions = llm.get_client().complete_batch(
                items, model=chosen, role="map", budget=state.budget, batch_label=label
            )
        except KeyboardInterrupt:
            raise interrupted() from None
        except llm.LLMCancelled:
            raise interrupted() from None
        except llm.BatchError as err:
            results = [None if c is None else str(c.text) for c in err.results]
            errors = {int(k): str(v) for k, v in err.errors.items()}
            record(
                ChildCall(
                    "llm_query_batched",
                    label,
                    False,
                    items=len(items),
                    failed=len(errors),
                    model=chosen,
                    error=f"{len(errors)} failed",
                    usage=_usage(list(err.results)),
                    seconds=time.monotonic() - started,
                    saw_context=sees_context(*(p for i, p in enumerate(items) if i not in errors)),
                )
            )
            if any("budget" in e.lower() for e in errors.values()) and state.run is not None:
                state.run.budget_error = next(e for e in errors.values() if "budget" in e.lower())
            first = min(errors)
            raise QueryBatchError(
                f"{len(errors)} of {len(items)} prompts failed (item {first}: {errors[first]}); "
                f"e.results has the {len(items) - len(errors)} answers (None where failed), "
                "e.errors the reasons",
                results,
                errors,
            ) from None
        except llm.BudgetExceeded as err:
            record(
                ChildCall(
                    "llm_query_batched", label, False, items=len(items), failed=len(items), error=str(err)
                )
            )
            raise budget_hit(str(err)) from None
        except RLMError as err:
            record(
                ChildCall(
                    "llm_query_batched", label, False, items=len(items), failed=len(items), error=str(err)
                )
            )
            raise QueryError(f"llm_query_batched failed: {err}") from None
        texts = [str(c.text) for c in completions]
        record(
            ChildCall(
                "llm_query_batched",
                label,
                True,
                items=len(items),
                response_preview=_preview(texts[0]),
                model=chosen or completions[0].model,
                usage=_usage(completions),
                seconds=time.monotonic() - started,
                saw_context=sees_context(*items),
                prompt=items[0],
                response=texts[0],
            )
        )
        return texts

    def child_steps(prompt: str, model: str | None, best_effort: bool | None = None):  # -> RunSteps
        run_rlm_steps = root_loop(state, "rlm_query").run_rlm_steps
        depth = max(state.depth, 0) + 1
        # a sub-RLM answers in text with the default prompt; tools carry on (rlm/tools)
        options = state.options.with_(
            shared=False, budget_usd=None, returns=None, system_prompt=None, system_prompt_extra=None
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

    def settle_child(
        prompt: str, model: str | None, result: object, seconds: float, calls: dict | None = None, i: int = 0
    ) -> str:
        """Record a finished sub-RLM as a child call (with its whole run; into `calls[i]` when given, for
        the caller to record in input order); returns its answer, or raises its error."""
        raw = getattr(result, "answer", None)
        answer = None if raw is None else str(raw)
        termination = getattr(result, "termination", "error")
        call = ChildCall(
            "rlm_query",
            _preview(prompt),
            answer is not None,
            response_preview=_preview(answer or ""),
            model=getattr(result, "model", None) or model,
            usage=getattr(result, "usage", Usage()),
            seconds=seconds,
            saw_context=sees_context(prompt),
            prompt=prompt,
            response=answer or "",
            run=result.tree() if hasattr(result, "tree") else None,  # type: ignore[union-attr]
            error=None if answer is not None else f"{termination}: {getattr(result, 'message', '')}",
            answer_kind=getattr(result, "answer_kind", None),
        )
        if calls is None:
            record(call)
        else:
            calls[i] = call
        if termination == "interrupted":
            raise interrupted()
        if answer is None:
            if termination == "budget":
                raise budget_hit(getattr(result, "message", ""))
            raise QueryError(
                f"rlm_query failed: the sub-RLM ended without an answer ({termination}: "
                f"{getattr(result, 'message', '')})"
            )
        return answer

    def at_max_depth() -> bool:
        return max(state.depth, 0) + 1 > state.options.max_depth

    def rlm_query(prompt: str, model: str | None = None, best_effort: bool | None = None) -> str:
        """Hand a sub-problem to a recursive sub-RLM whose `context` is `prompt`; returns its final answer.

        rlm_query(prompt, model=None, best_effort=None) -> str
        The sub-RLM runs the same root loop one level deeper in its own sandboxed namespace. At the maximum
        depth (default 2, option max_depth) it degrades to llm_query(prompt, model). A sub-RLM that stops
        without FINAL returns its best-effort answer (marked in the trajectory) unless best_effort=False,
        when it raises QueryError.
        """
        refuse_if_finished(state, "rlm_query")
        prompt = _check_prompt(prompt, "rlm_query")
        model = _check_options("rlm_query", model)[0]
        if best_effort is not None and best_effort is not True and best_effort is not False:
            raise QueryError("rlm_query: best_effort must be True, False or None") from None
        if at_max_depth():
            return llm_query(prompt, model=model)
        started = time.monotonic()
        try:
            result = root_loop(state, "rlm_query").drive(child_steps(prompt, model, best_effort))
        except RLMError as err:
            record(
                ChildCall("rlm_query", _preview(prompt), False, error=str(err), model=model, prompt=prompt)
            )
            raise QueryError(f"rlm_query failed: {err}") from None
        return settle_child(prompt, model, result, time.monotonic() - started)

    def rlm_query_batched(
        prompts: list[str], model: str | None = None, best_effort: bool | None = None
    ) -> list[str]:
        """Run one sub-RLM per prompt, several at once; returns their answers in input order.

        rlm_query_batched(prompts, model=None, best_effort=None) -> list[str]
        Up to `subrun_concurrency` sub-RLMs (setting, default 4) run at once: their model calls overlap,
        their code blocks run one at a time. At the maximum depth this is llm_query_batched. Failures
        surface like llm_query_batched: QueryBatchError with `.results` (None where failed) and `.errors`
        {index: reason}, after every prompt has been tried.
        """
        refuse_if_finished(state, "rlm_query_batched")
        items = _check_prompts(prompts, "rlm_query_batched")
        model = _check_options("rlm_query_batched", model)[0]
        if best_effort is not None and best_effort is not True and best_effort is not False:
            raise QueryError("rlm_query_batched: best_effort must be True, False or None") from None
        if at_max_depth():
            return llm_query_batched(items, model=model)
        if not items:
            return []
        results: list[str | None] = [None] * len(items)
        errors: dict[int, str] = {}
        events = llm.events
        label = f"{len(items)} sub-RLMs, first: {_preview(items[0])}"
        depth = int(getattr(state.budget, "depth", 0) or 0)

        # one fan-out whose items are the sub-RLMs: their own calls and fan-outs nest under it
        with events.BatchEvents(len(items), label=label, depth=depth, kind="rlm") as batch:

            def make(i: int):  # noqa: ANN202 - RunSteps
                def steps():  # noqa: ANN202 - the sub-RLM inside this fan-out's item
                    with batch.inside():
                        return (yield from child_steps(items[i], model, best_effort))

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
                    calls[i] = ChildCall(
                        "rlm_query", _preview(items[i]), False, error=str(error), prompt=items[i]
                    )
                    errors[i] = f"rlm_query failed: {error}"
                    batch.fail(i, errors[i])
                    return True
                try:
                    results[i] = settle_child(items[i], model, result, seconds, calls, i)
                except ReplError as err:
                    errors[i] = str(err)
                    batch.fail(i, str(err))
                    return not (state.run is not None and state.run.budget_error)
                except BaseException:  # an interrupt: the driver cancels the others and re-raises
                    batch.fail(i, events.CANCELLED)
                    raise
                batch.finish(i)
                return True

            calls: dict[int, ChildCall] = {}  # recorded in input order, whatever order the runs end in
            try:
                loop = root_loop(state, "rlm_query_batched")
                not_started = loop.run_concurrently(
                    [make(i) for i in range(len(items))], loop.subrun_concurrency(), on_start, on_end
                )
            except BaseException as err:  # an interrupt or time limit: the runs still going were cancelled
                for i in sorted(running):
                    batch.fail(i, events.CANCELLED)
                if isinstance(err, KeyboardInterrupt):
                    raise interrupted() from None
                raise
            finally:
                for i in sorted(calls):
                    record(calls[i])
            for j in not_started:
                errors[j] = "not started: the budget is exhausted"
        if errors:
            first = min(errors)
            raise QueryBatchError(
                f"{len(errors)} of {len(items)} sub-RLMs failed (item {first}: {errors[first]}); "
                f"e.results has the answers (None where failed), e.errors the reasons",
                results,
                errors,
            ) from None
        return [r for r in results if r is not None]

    def SHOW_VARS() -> str:  # noqa: N802 - the RLM reference name
        """Print the variables you created, with their type and size (helpers and context excluded); returns
        the same text (shown once: as the last expression of a cell it is not displayed again)."""
        hidden = set(HELPER_NAMES) | set(CONTEXT_NAMES) | set(state.protected) | {"final_answer"}
        rows = []
        for name, value in ns.items():
            if (
                name.startswith("_")
                or not name.isidentifier()
                or name in hidden
                or name in state.hidden
                or inspect.ismodule(value)
            ):
                continue
            try:
                size = f"len {len(value):,}"
            except Exception:  # noqa: BLE001 - objects without a length
                size = ""
            rows.append(f"{name:<24} {type(value).__name__:<16} {size}")
        text = "\n".join(rows) if rows else "(no variables yet)"
        emit(text)
        return shown.mark(text)  # type: ignore[return-value]

    def repl_set(name: str, value: object) -> None:
        """Set variable `name` to `value` in this namespace: repl_set(name, value)."""
        if type(name) is not str:
            raise ReplError(f"repl_set: the name must be a str, got {type(name).__name__}") from None
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise ReplError(f"repl_set: {name!r} is not a usable variable name") from None
        if name in HELPER_NAMES or name in CONTEXT_NAMES or name in state.protected:
            raise ReplError(f"repl_set: {name!r} is a preloaded name and cannot be replaced") from None
        ns[name] = value

    def repl_get(name: str, default: object = None) -> object:
        """Return variable `name` from this namespace, or `default`: repl_get(name, default=None)."""
        if type(name) is not str or name.startswith("_") or not name.isidentifier():
            return default  # exact str only: a subclass's methods must not decide what is read
        return ns.get(name, default)

    def finish(answer: object, how: str) -> None:
        text = _text_of(answer)
        if state.run is not None:
            gate = state.run.gate
            computed = how == "FINAL_VAR" or not gate.literal_in_block
            if not gate.accepts(text, computed):
                # fed back once, with the turn's notes (not also printed into the block's output)
                state.run.rejections.append(rejection(how, state.run.successes > 0))
                return
            state.run.final, state.run.final_set = text, True
            state.run.final_value = answer
            return
        ns["final_answer"] = text
        _display_final(text)

    def FINAL(answer: object) -> None:  # noqa: N802 - the RLM reference name
        """Give the final answer. In a root-loop run this ends the run (once a sub-model call has succeeded);
        in a notebook cell it displays the answer prominently and stores it in `final_answer`."""
        finish(answer, "FINAL")

    def FINAL_VAR(name: str) -> object:  # noqa: N802 - the RLM reference name
        """Give the value of the variable called `name` (a string) as the final answer, like FINAL; returns
        that value (shown once: as the last expression of a cell it is not displayed again)."""
        if type(name) is not str:
            raise ReplError(
                "FINAL_VAR takes the variable's name as a string, e.g. FINAL_VAR('answer')"
            ) from None
        if name.startswith("_") or not name.isidentifier() or name not in ns:
            raise ReplError(
                f"FINAL_VAR: there is no variable named {name!r}; set it first or use FINAL(value)"
            ) from None
        value = ns[name]
        finish(value, "FINAL_VAR")
        return shown.mark(value)

    def load_context(
        source: object,
        kind: str = "auto",
        encoding: str = "utf-8",
        errors: str = "strict",
        allow_secrets: bool = False,
        append: bool = False,
    ):
        """Load `context` (and `ctx`, `context_files`) from a string, a file, a directory or a glob.

        load_context(source, kind="auto", encoding="utf-8", errors="strict", allow_secrets=False,
                     append=False) -> summary
        `context_0` is the loaded context too; with append=True the source is added as `context_1`,
        `context_2`, … and `context` stays the first (the reference RLM library's names).
        A directory or glob becomes a corpus: files joined with `=== path ===` lines; `context_files` maps
        each path to its (start, end) offsets. Only paths under the allowed roots (the notebook's directory by
        default, or RLM_CONTEXT_ROOTS) are read. kind: auto, text, file, dir, glob or data.
        Secret files (.env*, .netrc, .pypirc, .git-credentials, *.pem, *.key, ssh keys, .git/) are refused
        (skipped in a directory or glob) unless your own cell passes allow_secrets=True; model code cannot.
        """
        try:
            source = _context_source(source)
            kind = exact_str(kind, "load_context: kind")
            encoding = exact_str(encoding, "load_context: encoding")
            errors = exact_str(errors, "load_context: errors")
        except CoercionError as err:
            raise ContextError(str(err)) from None
        if append is not True and append is not False:
            raise ContextError("load_context: append must be True or False") from None
        if allow_secrets is not False:
            if allow_secrets is not True:
                raise ContextError("load_context: allow_secrets must be True or False") from None
            refuse_in_model_code("load_context(..., allow_secrets=True)")
        try:
            loaded = ctxmod.load(
                source, kind=kind, encoding=encoding, errors=errors, allow_secrets=allow_secrets
            )
        except ContextError as err:
            raise ContextError(str(err)) from None
        except MemoryError:
            raise ContextError(
                "not enough memory to load this context under the kernel's memory limit (RLM_MEMORY_MB); "
                "load fewer or smaller files"
            ) from None
        add_context(state, ns, loaded, append)
        return loaded.summary()

    def load_corpus(source: object, partition_mb: float = corpusmod.DEFAULT_PARTITION_MB):
        """A Corpus of the text files of a directory, glob or file, read a partition at a time.

        load_corpus(source, partition_mb=16) -> Corpus
        For data bigger than memory: pass it to find_relevant(corpus, query) or map_reduce(corpus, ...),
        which read one partition (about partition_mb MiB) at a time — on the Dask cluster when the kernel
        was started with RLM_DASK_SCHEDULER. Only paths under the allowed roots are read, as for load_context.
        """
        try:
            source = exact_str(source, "load_corpus: source")
            partition_mb = exact_float(partition_mb, "load_corpus: partition_mb")
            return corpusmod.load_corpus(source, partition_mb)
        except (ContextError, CoercionError) as err:
            raise ContextError(str(err)) from None

    def rlm_run(question: str, context: object = None, **options: object):
        """Run the autonomous root loop on `question`; returns an RLMResult.

        rlm_run(question, context=None, model=None, child_model=None, max_iterations=20, max_depth=2,
                budget_usd=None, shared=False, max_no_code_turns=3, output_chars=4000, best_effort=True,
                tools=None, returns=None, system_prompt=None, system_prompt_extra=None,
                continue_from=None) -> RLMResult
        tools: {name: function} of notebook functions the root may call; returns: the answer's type (int,
        float, bool, str, list[...], dict[...] or a notebook dataclass); continue_from: an earlier result to
        ask a follow-up in its conversation, namespace and budget.
        `context` defaults to this namespace's context. The result has answer, iterations, calls, tokens,
        cost, termination, message, trajectory and namespace; export with result.save("run.ipynb") and
        result.to_jsonl(path).
        """
        refuse_if_finished(state, "rlm_run")
        refuse_in_model_code("rlm_run (use rlm_query for a sub-problem)")
        loop = root_loop(state, "rlm_run")
        if type(question) is not str or not question.strip():
            raise ReplError("rlm_run: the question must be a non-empty str") from None
        try:
            options = {exact_str(k, "rlm_run option"): v for k, v in options.items()}
            options, special, previous = loop.split_args(options, set(state.protected))
            options = {k: plain_data(v, f"rlm_run: {k}") for k, v in options.items()}
            opts = state.options.with_(**options, **special).check()
        except (TypeError, ValueError) as err:
            raise ReplError(f"rlm_run: {err}") from None
        if context is not None:
            try:
                context = _context_source(context)
            except CoercionError as err:
                raise ReplError(f"rlm_run: {err}") from None
        return loop.run_from_namespace(state, ns, question, context, opts, continue_from=previous)

    helpers = {
        "load_context": load_context,
        "load_corpus": load_corpus,
        "llm_query": llm_query,
        "llm_query_batched": llm_query_batched,
        "rlm_query": rlm_query,
        "rlm_query_batched": rlm_query_batched,
        "SHOW_VARS": SHOW_VARS,
        "repl_set": repl_set,
        "repl_get": repl_get,
        "FINAL": FINAL,
        "FINAL_VAR": FINAL_VAR,
        "rlm_run": rlm_run,
    }
    return helpers


def _display_final(text: str) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover
        print(f"FINAL ANSWER: {text}")
        return
    if get_ipython() is None:
        print(f"FINAL ANSWER: {text}")
        return
    body = html.escape(text)
    display(
        {
            "text/plain": f"FINAL ANSWER:\n{text}",
            "text/html": (
                "<div style='border:2px solid #2e7d32;border-radius:6px;padding:8px 12px;margin:4px 0'>"
                "<div style='font-weight:bold;color:#2e7d32'>FINAL ANSWER</div>"
                f"<div style='white-space:pre-wrap;font-size:1.1em'>{body}</div></div>"
            ),
        },
        raw=True,
    )
