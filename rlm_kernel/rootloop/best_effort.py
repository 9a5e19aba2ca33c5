"""Best-effort answers: when a run stops without an accepted FINAL, one last tool-free turn asks the root for
its best answer from what it has learned (`best_effort=False` / `--no-best-effort` turns it off).

Only the endings that leave the root able to answer get the turn: the turn limit, the no-code limit, the
budget and the cell's time limit. The turn is skipped, with the reason in the run's message, when the budget
cannot pay for the call. No code in the reply runs; its FINAL(...) text (or the named variable's value, or
else the whole prose) is the answer, checked against `returns=` when one is set.
"""

from __future__ import annotations

import time

import rlm_kernel.rootloop.answer_types as answer_types
from rlm_kernel.rootloop.reply_parse import extract, find_prose_final
from rlm_kernel.rootloop.steps import RunSteps
from rlm_kernel.rootloop.trajectory import Turn, Usage

__all__ = ["ENDINGS", "attempt", "request"]

ENDINGS = ("max_iterations", "no_code", "budget", "time_limit")
_OUTPUT_CHARS = 2000


def request(message: str) -> str:
    """The user message of the best-effort turn."""
    return (
        f"The run has stopped: {message}. No more code will run. From what you have learned so far, reply "
        "with your best answer to the question, as FINAL(your answer) — no code block. If you are unsure, "
        "give your best estimate and say briefly what is uncertain."
    )


def _messages(run: object, ask: str) -> list[dict]:
    from rlm_kernel.rootloop.textcut import truncate

    messages = [dict(m) for m in run.messages()]
    last = run.turns[-1] if run.turns else None
    if last is not None and not last.feedback and last.reply:  # the stopped turn was never fed back
        messages.append({"role": "assistant", "content": truncate(last.reply, 8000)})
        out = last.stdout.strip() or "(nothing printed)"
        ask = f"Output of turn {last.index}:\n{truncate(out, _OUTPUT_CHARS)}\n\n{ask}"
    if messages and messages[-1]["role"] == "user":
        messages[-1] = {"role": "user", "content": messages[-1]["content"] + "\n\n" + ask}
    else:
        messages.append({"role": "user", "content": ask})
    return messages


def _answer_of(reply: str, ns: dict) -> object:
    got = extract(reply)
    final = got.final
    for block in got.blocks if final is None else ():  # no code runs: a FINAL in a block is read as text
        final = find_prose_final(block) or final
    if final is not None:
        name = final.value
        if name.isidentifier() and not name.startswith("_") and name in ns:
            return ns[name]
        return final.value
    return (got.prose or reply).strip()


def attempt(run: object, reason: str, message: str) -> RunSteps:
    """Steps (see `steps`) returning (answer or None, "best_effort" or None, message) after a run that ended
    with `reason`: the best-effort turn's root call is yielded like every root call of the run."""
    from rlm_kernel import llm
    from rlm_kernel.errors import RLMError
    from rlm_kernel.sandbox.errors import CellTimeout

    if reason not in ENDINGS or not run.options.best_effort:
        return None, None, message
    started = time.monotonic()
    run.best_effort_request = request(message)  # what the conversation (`history`) records before the reply
    try:
        completion = yield from run.ask_root_steps(_messages(run, run.best_effort_request))
    except llm.BudgetExceeded as err:
        return (
            None,
            None,
            f"{message}; no best-effort answer: the budget cannot pay for one more root call ({err})",
        )
    except RLMError as err:
        return None, None, f"{message}; no best-effort answer: the root call failed ({err})"
    except KeyboardInterrupt:
        return None, None, f"{message}; no best-effort answer: interrupted"
    except CellTimeout as err:  # the cell's limit fired again during the call
        return None, None, f"{message}; no best-effort answer: the cell's time limit ({err})"
    reply = str(completion.text)
    turn = Turn(index=len(run.turns) + 1, reply=reply)
    turn.root_usage = Usage(
        1,
        int(completion.input_tokens or 0),
        int(completion.output_tokens or 0),
        float(completion.cost_usd or 0.0),
    )
    turn.seconds = time.monotonic() - started
    run.turns.append(turn)
    raw = _answer_of(reply, run.ns)
    answer: object = None
    if not (type(raw) is str and not raw):
        answer = raw
    if answer is not None and run.options.returns is not None:
        try:
            answer = answer_types.convert(raw, run.options.returns)
        except answer_types.AnswerTypeError as err:
            turn.note = (
                f"best-effort answer not used: it is not {answer_types.describe(run.options.returns)} ({err})"
            )
            run.show(turn, "no best-effort answer")
            return None, None, f"{message}; the best-effort answer did not fit returns= ({err})"
    elif answer is not None:
        answer = answer_types.text_of(answer)
    if answer is None:
        turn.note = "best-effort turn gave no answer"
        run.show(turn, "no best-effort answer")
        return None, None, f"{message}; the best-effort turn gave no answer"
    turn.final = answer_types.text_of(answer)
    turn.note = "best-effort answer (one last turn without code)"
    run.show(turn, "best-effort answer")
    return answer, "best_effort", f"{message}; best-effort answer from one last turn without code"
