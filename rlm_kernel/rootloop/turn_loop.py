"""One run's turns with the root model: ask it, run its ```repl blocks, judge a FINAL, feed back, repeat.

Ends on an accepted FINAL, a limit (iterations, turns without code, budget, the cell's time limit), an
interrupt or a failed root call; `rootloop.driver` sets the run up and turns its end into an RLMResult.
"""

from __future__ import annotations

import contextlib
import time

from rlm_kernel.errors import RLMError
from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.gate import rejection
from rlm_kernel.repl.state import ReplState, RunOptions, RunTracker
from rlm_kernel.repl.subtask import task_of
from rlm_kernel.rootloop import answer_types, continuation, prompt_control
from rlm_kernel.rootloop.bindings import Bindings
from rlm_kernel.rootloop.blocks import execute_blocks
from rlm_kernel.rootloop.compaction import maybe_compact
from rlm_kernel.rootloop.display import LiveDisplay
from rlm_kernel.rootloop.feedback import feedback, hints, repeat_feedback
from rlm_kernel.rootloop.prompt import context_message, window_tokens
from rlm_kernel.rootloop.reply_parse import extract, near_final
from rlm_kernel.rootloop.search_fix import SearchFix, rerun_fixed_search
from rlm_kernel.rootloop.steps import RootRequest, RunSteps
from rlm_kernel.rootloop.textcut import truncate
from rlm_kernel.rootloop.trajectory import RLMResult, Turn, Usage
from rlm_kernel.sandbox.limits import uninterruptible

__all__ = ["TurnLoop", "answer_text"]

_REPLY_KEEP = 8000


def answer_text(value: object) -> str:
    """A FINAL value as the answer text: a str as is, a number as str(), anything else as repr()."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return repr(value)


class TurnLoop:
    """One run's conversation with the root model, turn by turn: ask, run the reply's blocks, judge a
    FINAL, feed back. `run()` is the loop as steps; best_effort, compaction and continuation read it."""

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
        self.bindings: Bindings | None = None  # a --shared run's (the driver sets it)
        self.turns: list[Turn] = []
        self.usage = Usage()
        self.first = context_message(question, loaded.value, options.preview_chars, dict(loaded.files))
        self.prior: list[dict] = []
        if previous is not None:  # a follow-up (rlm/continuation)
            self.first = continuation.follow_up_message(question, previous)
            self.prior = continuation.prior_messages(previous)
        note = continuation.counts_note(state)  # context_N and history_N, as the reference says
        if note:
            self.first = f"{self.first}\n\n{note}"
        self.raw_final: object = None
        self.found: tuple[int, str] | None = None  # (turn, output) that code found for the question
        self.next_key: str | None = None  # what a hint told the root to search for next (rootloop.found)
        self.search_fixes: dict[int, SearchFix] = {}  # turn -> the search the loop re-ran fixed (search_fix)
        self.steps: list[tuple[str, str]] = []  # (step line, key) of every such hint: a chain's hops so far
        self.history: list[dict] = []
        self.model: str | None = None
        self.summary, self.compacted = "", 0  # see compaction.py
        self.task = task_of(question, loaded.value)  # a sub-RLM's task lines and where its text starts
        self.prior_compacted = False  # the earlier conversation of a follow-up went into the summary

    # -- model side
    def first_message(self) -> str:
        """The run's first user message, with the compaction summary once there is one."""
        if not self.summary:
            return self.first
        what = f"the first {self.compacted} turn(s)"
        if self.prior_compacted:
            what = f"the earlier conversation and {what}" if self.compacted else "the earlier conversation"
        return f"{self.first}\n\n[Summary of {what}, compacted]\n{self.summary}"

    def messages(self) -> list[dict]:
        keep = self.history[-2 * self.options.history_turns :] if self.history else []
        dropped = (len(self.history) - len(keep)) // 2
        first = self.first_message()
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
        errors = str(getattr(client.config, "errors_in_model_code", "raise"))
        files = list(self.loaded.files)
        system = prompt_control.build(
            self.options,
            window,
            answer_tokens,
            corpus=bool(files),
            errors=errors,
            example_file=files[0] if files else None,
            question=self.question,
            context=self.loaded.value if isinstance(self.loaded.value, str) else "",
        )
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

    # -- FINAL -----------------------------------------------------------------------------------------------
    def prose_final(self, kind: str, value: str, tracker: RunTracker) -> tuple[str | None, str | None]:
        """(answer, rejection-or-error) for a FINAL written in prose.

        `FINAL_VAR(name)` and `FINAL(name)` naming one of the run's variables give that variable's value;
        any other `FINAL(text)` gives the text itself.
        """
        from rlm_kernel.repl.names import CONTEXT_NAMES, HELPER_NAMES

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
            text, computed = answer_text(self.ns[value]), value in tracker.gate.flow.names
        else:
            self.raw_final = value
            text, computed = value, False
        scoped = names_variable and tracker.gate.in_scope(value)
        why = tracker.gate.problem(text, computed, self.raw_final if names_variable else None, scoped)
        if why is not None:
            blind = tracker.successes > 0 and not tracker.gate.context_calls
            return None, rejection(kind, blind, why)
        return text, None

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
                    calls_before = len(tracker.calls)
                    execute_blocks(self, got.blocks, turn, notes)
                    fix = rerun_fixed_search(self, turn, calls_before)
                    if fix is not None:
                        self.search_fixes[index] = fix
                else:
                    no_code += 1
                turn.calls, rejections = tracker.drain()
                if tracker.interrupted:
                    raise KeyboardInterrupt
                notes = rejections + notes
                answer = tracker.final if tracker.final_set else None
                if got.final is None and (wrong := near_final(got.prose)):
                    notes.append(
                        f"`{wrong}(...)` is not read as the end of the run: did you mean FINAL(...)? "
                        "Write FINAL or FINAL_VAR in upper case."
                    )
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
                if index in self.search_fixes:  # in the trajectory; the feedback's hint says it to the root
                    fix = self.search_fixes[index]
                    rerun = f"the loop re-ran the block with {fix.replacement!r} for {fix.word!r}."
                    turn.note = f"{turn.note} {rerun}".strip()
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
                turn.feedback = (None if notes else repeat_feedback(self, turn)) or feedback(
                    self, turn, got.ignored, notes, no_code, hints(self, turn)
                )
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


# The loop's own lines (between blocks: draining calls, judging a FINAL, the feedback) run with the cell's
# frame below them, and the cell's timers repeat once fired: a wall limit that had ended a batch of sub-RLMs
# inside a block fired again in that code and the run raised CellTimeout out of the cell instead of ending
# at its time limit (a loaded CI machine, tests/rootloop/test_kernel_subruns.py). A firing here only
# cancels; the loop's own check of `session.cancelled` after each block ends the run. Blocks (sandboxed
# frames) and root calls (made by `steps.drive`, this generator suspended) stay interruptible.
uninterruptible(TurnLoop.run)
