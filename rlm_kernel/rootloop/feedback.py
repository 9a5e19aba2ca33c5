"""What the root model reads after a turn: the block's output, the notes, the turns left, and the hints
(a repeated block, a sub-call that saw none of `context`, output that looks like the answer, how to end).

Functions of the running run (a `rootloop.turn_loop.TurnLoop`: its options, turns, context, namespace).
"""

from __future__ import annotations

from typing import Any

from rlm_kernel.repl.gate import names_from_sub_calls, prints_only_literals
from rlm_kernel.repl.subtask import quotes_task
from rlm_kernel.rootloop.textcut import truncate
from rlm_kernel.rootloop.trajectory import Turn

__all__ = ["feedback", "hints"]

_ANSWER_LIKE_CHARS = 200
_ANSWER_LIKE_LINES = 4


def _same_code(a: str, b: str) -> bool:
    def norm(code: str) -> str:
        return "\n".join(line.rstrip() for line in code.strip().splitlines() if line.strip())

    return norm(a) == norm(b)


def feedback(
    run: Any, turn: Turn, ignored: dict[str, int], notes: list[str], no_code: int, hints: list[str] = ()
) -> str:
    """What the root reads after a turn: the output, the notes, the turns left, then the hints (last, so
    a small model reads them right before it writes)."""
    limit = run.options.output_chars
    if turn.code is None:
        body = (
            "Your reply had no ```repl block, so nothing ran. Reply with a ```repl block "
            f"(turn {no_code} of at most {run.options.max_no_code_turns} in a row without code)."
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
    left = run.options.max_iterations - turn.index
    tail = f"\n\n{left} turn(s) left. Continue with a ```repl block, or end with FINAL(answer)."
    text = body + ("\n\n" + "\n".join(notes) if notes else "") + tail
    return text + ("\n\n" + "\n\n".join(dict.fromkeys(hints)) if hints else "")


def hints(run: Any, turn: Turn) -> list[str]:
    """Nudges for a turn that did not end the run: a repeated block, output that looks like the answer."""
    out: list[str] = []
    if turn.code is None:
        return out
    earlier = [t for t in run.turns if t is not turn and t.code is not None]
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
        where = "`context_files[name]` or " if run.loaded.files else ""
        out.append(
            f"That {blind[0]} call had none of `context` in it, so its answer is a guess: the sub-model "
            "sees only the prompt you pass. Pass it the part of `context` it needs: "
            f'{blind[0]}("<the question>\\n\\nText:\\n" + context[start:end]), with start, end from '
            f"{where}around a search hit (i = context.find(...))."
        )
    if not turn.error and any(c.ok and c.saw_context for c in turn.calls):
        out.append(_read_hint(run, turn))
    task = run.task
    if task is not None and quotes_task(turn.stdout, task[0]):
        # Measured with the coder model on two sub-RLMs whose search printed their task's own line next to
        # the hits: with no hint one asked llm_query without the text, the other re-ran its search; told
        # only where the text starts, the second still re-ran it; told "search and work in context[N:]",
        # the first re-ran its search there without ending; with this wording the first counted in
        # context[N:] and the second searched there.
        start = task[1]
        out.append(
            "Your search also matched the task itself (the start of `context`); the text the task is "
            f"about is `context[{start}:]`. Do the task on `context[{start}:]`, not on `context`."
        )
    printed = turn.stdout.strip()
    lines = [line for line in printed.splitlines() if line.strip()]
    tracker = run.state.run
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


def _read_hint(run: Any, turn: Turn) -> str:
    """After a sub-call that was given part of `context` answered: the FINAL gate is open, say how to end.

    Measured with the coder model: without it, the root re-sent the same call turn after turn."""
    names = [n for n in names_from_sub_calls(turn.code or "") if isinstance(run.ns.get(n), str)]
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
