"""The autonomous root loop: ask the root model, run its ```repl blocks in the sandbox, feed back, repeat.

Ends on an accepted FINAL, a limit (iterations, turns without code, budget), an interrupt or a root error.
"""

from __future__ import annotations

import contextlib
import time

from rlm_kernel.callscope import call_scope
from rlm_kernel.errors import RLMError
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.errors import ReplError
from rlm_kernel.repl.gate import block_facts, names_from_sub_calls, prints_only_literals, rejection
from rlm_kernel.repl.state import ReplState, RootLoop, RunOptions, RunTracker
from rlm_kernel.repl.subtask import quotes_task, task_of
from rlm_kernel.rootloop import (
    answer_dict,
    answer_types,
    best_effort,
    continuation,
    prompt_control,
    run_args,
    subruns,
    tools,
)
from rlm_kernel.rootloop.compaction import maybe_compact
from rlm_kernel.rootloop.display import LiveDisplay, RunBudgetDisplay
from rlm_kernel.rootloop.prompt import context_message, window_tokens
from rlm_kernel.rootloop.reply_parse import extract
from rlm_kernel.rootloop.steps import RootRequest, RunSteps, drive
from rlm_kernel.rootloop.textcut import truncate
from rlm_kernel.rootloop.trajectory import RLMResult, Turn, Usage

__all__ = ["ROOT_LOOP", "active_runs", "run_from_namespace", "run_rlm", "run_rlm_steps", "truncate"]

_REPLY_KEEP = 8000
_ANSWER_LIKE_CHARS = 200
_ANSWER_LIKE_LINES = 4
_active = 0


def active_runs() -> int:
    """How many root-loop runs are in progress in this process (nested sub-RLMs included)."""
    return _active


def answer_text(value: object) -> str:
    """A FINAL value as the answer text: a str as is, a number as str(), anything else as repr()."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return repr(value)


def _same_code(a: str, b: str) -> bool:
    def norm(code: str) -> str:
        return "\n".join(line.rstrip() for line in code.strip().splitlines() if line.strip())

    return norm(a) == norm(b)


def _make_budget(parent: object | None, budget_usd: float | None, depth: int = 1) -> object | None:
    from rlm_kernel import llm

    base = parent if parent is not None else llm.get_session_budget()
    limits: dict[str, object] = {"max_usd": budget_usd} if budget_usd else {}
    limits["label"] = "rlm run" if depth <= 1 else f"sub-RLM (depth {depth})"
    return base.child(**limits) if base is not None else llm.Budget(**limits)


class _Run:
    def __init__(
        self,
        question: str,
        loaded: ctxmod.LoadedContext,
        ns: dict,
        state: ReplState,
        options: RunOptions,
        display: LiveDisplay | None,
        previous: RLMResult | None = None,
    ) -> None:
        self.question, self.loaded, self.ns, self.state = question, loaded, ns, state
        self.options, self.display = options, display
        self.turns: list[Turn] = []
        self.usage = Usage()
        self.first = context_message(question, loaded.value, options.preview_chars, dict(loaded.files))
        self.prior: list[dict] = []
        if previous is not None:  # a follow-up (rlm/continuation)
            self.first = continuation.follow_up_message(question, previous)
            self.prior = continuation.prior_messages(previous)
        self.raw_final: object = None
        self.history: list[dict] = []
        self.model: str | None = None
        self.summary, self.compacted = "", 0  # see compaction.py
        self.task = task_of(question, loaded.value)  # a sub-RLM's task lines and where its text starts

    # -- model side
    def messages(self) -> list[dict]:
        keep = self.history[-2 * self.options.history_turns :] if self.history else []
        dropped = (len(self.history) - len(keep)) // 2
        first = self.first
        if self.summary:
            first += f"\n\n[Summary of the first {self.compacted} turn(s), compacted]\n{self.summary}"
        if dropped:
            first += (
                f"\n\n[{dropped} earlier turn(s) are not shown to keep the history short; the variables they "
                "created are still in the namespace — use SHOW_VARS().]"
            )
        return continuation.join_users([*self.prior, {"role": "user", "content": first}, *keep])

    def root_request(self, messages: list[dict] | None = None) -> RootRequest:
        """The next root-model call (made by whoever drives the run: `steps.drive` or `subruns`)."""
        from rlm_kernel import llm

        client = llm.get_client()
        model = self.options.model or getattr(client.config, "root_model", None)
        window = window_tokens(client.config)
        answer_tokens = int(getattr(client.config, "max_tokens", 1024) or 1024)
        system = prompt_control.build(self.options, window, answer_tokens, corpus=bool(self.loaded.files))
        if self.model is None:  # named in the trajectory even if no call ever answers
            from rlm_kernel.llm.tiers import resolve_model

            with contextlib.suppress(Exception):
                self.model = resolve_model(model, role="synthesis", prompt_tokens=0, config=client.config)[1]
        return RootRequest(
            messages if messages is not None else self.messages(), model, system, self.state.budget
        )

    def ask_root_steps(self, messages: list[dict] | None = None) -> RunSteps:
        """Yield the next root request; returns its completion (noting the model that answered)."""
        request = self.root_request(messages)
        completion = yield request
        self.model = getattr(completion, "model", None) or self.model or request.model
        return completion

    def ask_root(self, messages: list[dict] | None = None) -> object:
        """The next root call, made here and waited for (not overlapped with other runs' calls)."""
        return drive(self.ask_root_steps(messages))

    # -- sandbox side
    def execute_blocks(self, blocks: tuple[str, ...], turn: Turn, notes: list[str]) -> None:
        """Run the reply's blocks in order, stopping after a block that ends the run or raises."""
        tracker = self.state.run
        assert tracker is not None
        outputs: list[str] = []
        for i, code in enumerate(blocks, 1):
            reads, literal = block_facts(code)
            if reads:
                tracker.gate.code_read_context = True
            tracker.gate.literal_in_block = literal
            armed = answer_dict.before(self.ns)
            before = len(tracker.calls)
            stdout, value, error = self.execute(code, turn.index)
            if not tracker.final_set:
                answer_dict.check(self.ns, tracker, code, armed)  # the reference library's answer["ready"]
            # what a context-free sub-call said is the sub-model's guess, not evidence from the context (a
            # sub-RLM printed such a refusal and had it accepted as its FINAL by gate rule 3)
            blind = any(c.ok and not c.saw_context for c in tracker.calls[before:])
            if not prints_only_literals(code) and not blind:
                tracker.gate.saw(stdout + ("\n" + value if value is not None else ""))
            label = f"[block {i} of {len(blocks)}]\n" if len(blocks) > 1 else ""
            outputs.append(label + stdout)
            turn.value, turn.error = value, error
            left = len(blocks) - i
            if tracker.final_set or tracker.interrupted or tracker.budget_error:
                break
            if error and left:
                notes.append(
                    f"Block {i} of {len(blocks)} raised an error; the {left} block(s) after it did not run."
                )
                break
            if getattr(self.state.session, "cancelled", None):
                break
        turn.stdout = "".join(outputs)

    def execute(self, code: str, index: int) -> tuple[str, str | None, str | None]:
        """Run one block in the run's namespace: (stdout, value repr, error)."""
        from rlm_kernel.repl import preload
        from rlm_kernel.sandbox import SandboxSession, repair_namespace, run_source
        from rlm_kernel.sandbox.origin import model_code

        if self.state.session is None:
            self.state.session = SandboxSession()
        session = self.state.session
        preload.repair(self.ns)
        repair_namespace(self.ns, session)
        # A block's output goes to the root, not to the notebook: give each block the full per-cell output
        # allowance, and leave the cell's own accounting as it was.
        saved = (getattr(session, "output_used", 0), getattr(session, "output_dropped", 0))
        session.output_used, session.output_dropped = 0, 0
        try:
            with model_code():  # model-written: may not run magics or change settings (sandbox/origin.py)
                outcome = run_source(code, self.ns, session, filename=f"<rlm turn {index}>")
            dropped = session.output_dropped
        finally:
            session.output_used, session.output_dropped = saved
        stdout = outcome.stdout
        if dropped:
            stdout += f"\n[output cut: {dropped:,} more bytes over the per-block limit (RLM_OUTPUT_BYTES)]"
        preload.repair(self.ns)
        return stdout, outcome.value_repr, outcome.error

    # -- FINAL -----------------------------------------------------------------------------------------------
    def prose_final(self, kind: str, value: str, tracker: RunTracker) -> tuple[str | None, str | None]:
        """(answer, rejection-or-error) for a FINAL written in prose.

        `FINAL_VAR(name)` and `FINAL(name)` naming one of the run's variables give that variable's value;
        any other `FINAL(text)` gives the text itself.
        """
        from rlm_kernel.repl.helpers import CONTEXT_NAMES, HELPER_NAMES

        names_variable = (
            value.isidentifier()
            and value in self.ns
            and not value.startswith("_")
            and value not in HELPER_NAMES
            and value not in CONTEXT_NAMES
        )
        if kind == "FINAL_VAR" or names_variable:
            if not names_variable:
                return None, f"FINAL_VAR({value}) failed: there is no variable named {value!r}."
            self.raw_final = self.ns[value]
            text, computed = answer_text(self.ns[value]), True
        else:
            self.raw_final = value
            text, computed = value, False
        if not tracker.gate.accepts(text, computed):
            return None, rejection(kind, tracker.successes > 0)
        return text, None

    def feedback(
        self, turn: Turn, ignored: dict[str, int], notes: list[str], no_code: int, hints: list[str] = ()
    ) -> str:
        """What the root reads after a turn: the output, the notes, the turns left, then the hints (last, so
        a small model reads them right before it writes)."""
        limit = self.options.output_chars
        if turn.code is None:
            body = (
                "Your reply had no ```repl block, so nothing ran. Reply with a ```repl block "
                f"(turn {no_code} of at most {self.options.max_no_code_turns} in a row without code)."
            )
        else:
            parts = [f"Output of turn {turn.index}:"]
            parts.append(truncate(turn.stdout, limit) if turn.stdout.strip() else "(nothing printed)")
            if turn.value is not None:
                parts.append("Value: " + truncate(turn.value, limit // 2))
            if turn.error:
                parts.append("Error: " + truncate(turn.error, limit // 2))
            body = "\n".join(parts)
        ran = "```repl" if not ignored or "repl" not in ignored else "```python"
        if ignored:
            kinds = ", ".join(f"{n} {kind} block{'s' if n > 1 else ''}" for kind, n in ignored.items())
            notes = [f"Ignored {kinds}: only {ran} blocks ran. Put all code in ```repl blocks."] + notes
        notes = list(dict.fromkeys(notes))  # one copy of each note
        left = self.options.max_iterations - turn.index
        tail = f"\n\n{left} turn(s) left. Continue with a ```repl block, or end with FINAL(answer)."
        text = body + ("\n\n" + "\n".join(notes) if notes else "") + tail
        return text + ("\n\n" + "\n\n".join(dict.fromkeys(hints)) if hints else "")

    def hints(self, turn: Turn) -> list[str]:
        """Nudges for a turn that did not end the run: a repeated block, output that looks like the answer."""
        out: list[str] = []
        if turn.code is None:
            return out
        earlier = [t for t in self.turns if t is not turn and t.code is not None]
        if earlier and _same_code(earlier[-1].code or "", turn.code):
            out.append(
                f"This block is the same as the one in turn {earlier[-1].index}: running it again tells you "
                "nothing new. If its output answers the question, call FINAL now; otherwise do something "
                "different."
            )
        blind = [c.kind for c in turn.calls if c.ok and not c.saw_context]
        if blind:
            # Measured with the coder model: a hint with a code template is copied literally ('word' and all)
            # and a search suggestion is ignored; naming where start and end come from is acted on.
            where = "`context_files[name]` or " if self.loaded.files else ""
            out.append(
                f"That {blind[0]} call had none of `context` in it, so its answer is a guess: the sub-model "
                "sees only the prompt you pass. Pass it the part of `context` it needs: "
                f'{blind[0]}("<the question>\\n\\nText:\\n" + context[start:end]), with start, end from '
                f"{where}around a search hit (i = context.find(...))."
            )
        if not turn.error and any(c.ok and c.saw_context for c in turn.calls):
            out.append(self._read_hint(turn))
        if self.task is not None and quotes_task(turn.stdout, self.task[0]):
            # Measured with the coder model on two sub-RLMs whose search printed their task's own line next to
            # the hits: with no hint one asked llm_query without the text, the other re-ran its search; told
            # only where the text starts, the second still re-ran it; told "search and work in context[N:]",
            # the first re-ran its search there without ending; with this wording the first counted in
            # context[N:] and the second searched there.
            start = self.task[1]
            out.append(
                "Your search also matched the task itself (the start of `context`); the text the task is "
                f"about is `context[{start}:]`. Do the task on `context[{start}:]`, not on `context`."
            )
        printed = turn.stdout.strip()
        lines = [line for line in printed.splitlines() if line.strip()]
        tracker = self.state.run
        if not turn.error and printed and tracker is not None and tracker.gate.code_read_context:
            short = len(printed) <= _ANSWER_LIKE_CHARS and len(lines) <= _ANSWER_LIKE_LINES
            if short and prints_only_literals(turn.code):
                out.append(
                    "You printed your answer as text, but printing does not end the run. Submit it — reply "
                    f"with just:\n```repl\nFINAL({printed[:300]!r})\n```"
                )
            elif any(t.stdout.strip() == printed for t in earlier):
                # Only once the root prints the same output again: a first short output is as often a step
                # (a length, a count of hits) as the answer, and a small model told "reply with just
                # FINAL('468615')" after `print(len(context))` re-runs that block instead of searching. Any
                # length: a sub-RLM that printed its count above the matching lines (230 characters) re-ran
                # the block until told this, then ended with FINAL(4) (coder model, measured).
                one = len(lines) == 1 and short
                example = repr(lines[0].strip()) if one else "answer"
                out.append(
                    "Printing an answer does not end the run. If this output answers the question, reply "
                    f"with just:\n```repl\nFINAL({example})\n```\n"
                    "(or FINAL_VAR('name') for a variable holding the answer)."
                )
        return out

    def _read_hint(self, turn: Turn) -> str:
        """After a sub-call that was given part of `context` answered: the FINAL gate is open, say how to end.

        Measured with the coder model: without it, the root re-sent the same call turn after turn."""
        names = [n for n in names_from_sub_calls(turn.code or "") if isinstance(self.ns.get(n), str)]
        if names:
            end = f"FINAL_VAR({names[-1]!r})"
        elif turn.value is not None and len(turn.value) <= _ANSWER_LIKE_CHARS * 2:
            end = f"FINAL({turn.value})"
        else:  # no variable holds it: FINAL(answer) here was a NameError, turn after turn (measured)
            kind = next(c.kind for c in turn.calls if c.ok and c.saw_context)
            return (
                f"Your {kind} call was given part of `context` and answered, but no variable holds its "
                f"answer. If it answers the question, run the call as `answer = {kind}(...)` and end with "
                "FINAL_VAR('answer')."
            )
        kind = next(c.kind for c in turn.calls if c.ok and c.saw_context)
        return (
            f"Your {kind} call was given part of `context` and answered. If that answer answers the "
            f"question, end the run now — reply with just:\n```repl\n{end}\n```\nOtherwise ask about "
            "another part of `context`."
        )

    # -- the loop --------------------------------------------------------------------------------------------
    def run(self) -> RunSteps:
        """The loop as steps (see `steps`): yields root requests, returns (answer, termination, message)."""
        from rlm_kernel import llm

        tracker = self.state.run
        assert tracker is not None
        no_code = 0
        for index in range(1, self.options.max_iterations + 1):
            turn = Turn(index=index, reply="")
            started = time.monotonic()
            try:
                try:
                    yield from maybe_compact(self, index)
                    completion = yield from self.ask_root_steps()
                except llm.BudgetExceeded as err:
                    return None, "budget", f"the budget was exhausted before turn {index}: {err}"
                except RLMError as err:
                    return None, "error", f"the root model call failed at turn {index}: {err}"
                turn.reply = str(completion.text)
                turn.root_usage = Usage.of([completion])
                self.turns.append(turn)
                got = extract(turn.reply)
                notes: list[str] = []
                if got.code is not None:
                    no_code = 0
                    turn.code = got.code
                    self.execute_blocks(got.blocks, turn, notes)
                else:
                    no_code += 1
                turn.calls, rejections = tracker.drain()
                if tracker.interrupted:
                    raise KeyboardInterrupt
                notes = rejections + notes
                answer = tracker.final if tracker.final_set else None
                if answer is None and got.final is not None:
                    answer, problem = self.prose_final(got.final.kind, got.final.value, tracker)
                    if problem:
                        notes.append(problem)
                elif answer is not None:
                    self.raw_final = tracker.final_value
                if answer is not None and self.options.returns is not None:
                    answer = self.typed(answer, tracker, notes)
                turn.seconds = time.monotonic() - started
                turn.note = " ".join(notes)
                if answer is not None:
                    turn.final = answer_types.text_of(answer)
                    self._show(turn, "final answer")
                    return answer, "final", f"FINAL accepted at turn {index}"
                cancelled = getattr(self.state.session, "cancelled", None)
                if cancelled:
                    self._show(turn, "time limit")
                    return (
                        None,
                        "time_limit",
                        (
                            f"the cell's time limit ended the run during turn {index} ({cancelled}); "
                            "raise RLM_CPU_SECONDS / RLM_WALL_SECONDS for longer runs"
                        ),
                    )
                if tracker.budget_error:
                    self._show(turn, "budget exhausted")
                    return (
                        None,
                        "budget",
                        f"the budget was exhausted during turn {index}: {tracker.budget_error}",
                    )
                turn.feedback = self.feedback(turn, got.ignored, notes, no_code, self.hints(turn))
                self.history += [
                    {"role": "assistant", "content": truncate(turn.reply, _REPLY_KEEP)},
                    {"role": "user", "content": turn.feedback},
                ]
                self._show(turn, f"turn {index} of at most {self.options.max_iterations}")
                if no_code >= self.options.max_no_code_turns:
                    return (
                        None,
                        "no_code",
                        f"{no_code} turns in a row without a code block (max_no_code_turns)",
                    )
            except KeyboardInterrupt:
                turn.seconds = time.monotonic() - started
                turn.note = (turn.note + " interrupted").strip()
                if turn in self.turns:
                    self._show(turn, "interrupted")
                try:
                    llm.cancel_all()
                except Exception:  # noqa: BLE001 - best effort
                    pass
                return None, "interrupted", f"interrupted during turn {index}"
        return (
            None,
            "max_iterations",
            f"no accepted FINAL within {self.options.max_iterations} turns (max_iterations)",
        )

    def typed(self, answer: object, tracker: RunTracker, notes: list[str]) -> object:
        """The accepted FINAL as the `returns=` type, or None with the reason in `notes` (answer_types)."""
        try:
            return answer_types.convert(self.raw_final, self.options.returns)
        except answer_types.AnswerTypeError as err:
            tracker.final, tracker.final_set, tracker.final_value = None, False, None
            notes.append(answer_types.rejection(self.options.returns, str(err)))
            return None

    def show(self, turn: Turn, status: str) -> None:
        self._show(turn, status)

    def _show(self, turn: Turn, status: str) -> None:
        if self.display is not None:
            self.display.turn(turn, status)


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
    from rlm_kernel.repl.helpers import set_context
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
    if earlier is None:
        answer_dict.install(ns, shared)
    global _active
    display = LiveDisplay(question) if live else None
    shown_budget = RunBudgetDisplay(budget) if live else None
    run = _Run(question, loaded, ns, state, options, display, continue_from)
    tracker.gate.question = question
    if not tracker.gate.source_for(loaded.value).strip():
        tracker.gate.code_read_context = True  # nothing loaded: every block works on the question itself
    _active += 1
    try:
        # calls made in the run without an explicit budget (map_reduce, find_relevant) are charged to it
        # and noted in its trajectory: the call scope carries both to the LLM layer
        with call_scope(budget=budget, run=tracker):
            answer, reason, message = yield from run.run()
            kind = "final" if answer is not None else None
            if answer is None:
                answer, kind, message = yield from best_effort.attempt(run, reason, message)
    finally:
        _active -= 1
        if saved is not None:
            state.depth, state.budget, state.run, state.options = saved
        else:
            preload.forget(ns)
            state.finished = True  # its helpers stay in rlm_result.namespace: they make no more calls
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
        _history=continuation.transcript(run.prior, run.first, run),
    )
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
