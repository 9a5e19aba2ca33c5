"""The answer helpers: `FINAL(value)` and `FINAL_VAR(name)` — end a run through its FINAL gate, or, in a
person's cell, show the answer and keep it in `final_answer`."""

from __future__ import annotations

import html

from IPython import get_ipython
from IPython.display import display

from rlm_kernel.repl.errors import ReplError
from rlm_kernel.repl.gate import rejection
from rlm_kernel.repl.state import ReplState
from rlm_kernel.repl.translate import translated
from rlm_kernel.sandbox.coerce import exact_str

__all__ = ["FINAL", "FINAL_VAR"]


def _text_of(answer: object) -> str:
    """FINAL's text: str as is, numbers by str(), anything else by repr() (run here, in the cell)."""
    kind = type(answer)
    if issubclass(kind, str):
        return exact_str(answer, "FINAL")
    if kind in (int, float, bool):
        return str(answer)
    return exact_str(repr(answer), "repr() of the answer")


def _finish(state: ReplState, ns: dict, answer: object, how: str, name: str | None = None) -> str:
    text = _text_of(answer)
    if state.run is not None:
        gate = state.run.gate
        computed = gate.final_drawn if name is None else name in gate.flow.names
        why = gate.problem(text, computed, answer)
        if why is not None:
            # fed back once, with the turn's notes (not also printed into the block's output)
            blind = state.run.successes > 0 and not gate.context_calls
            state.run.rejections.append(rejection(how, blind, why))
            return text
        state.run.final, state.run.final_set = text, True
        state.run.final_value = answer
        return text
    ns["final_answer"] = text
    _display_final(text)
    return text


def FINAL(state: ReplState, ns: dict, answer: object) -> None:  # noqa: N802 - the RLM reference name
    """Give the final answer. In a root-loop run this ends the run (once a sub-model call has succeeded);
    in a notebook cell it displays the answer prominently and stores it in `final_answer`."""
    _finish(state, ns, answer, "FINAL")


def FINAL_VAR(state: ReplState, ns: dict, name: str) -> str:  # noqa: N802 - the RLM reference name
    """Give the value of the variable called `name` (a string) as the final answer, like FINAL; returns
    the answer's text, str(value) (shown once: as the last expression of a cell it is not displayed
    again)."""
    with translated(state, "FINAL_VAR", error=ReplError, model_call=False):
        if type(name) is not str:
            raise ReplError("FINAL_VAR takes the variable's name as a string, e.g. FINAL_VAR('result')")
        if name.startswith("_") or not name.isidentifier() or name not in ns:
            raise ReplError(
                f"FINAL_VAR: there is no variable named {name!r}; set it first or use FINAL(value)"
            )
    value = ns[name]
    # the answer's text, as the reference's FINAL_VAR returned it
    return state.mark_shown(_finish(state, ns, value, "FINAL_VAR", name))  # type: ignore[return-value]


def _display_final(text: str) -> None:
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
