"""The answer helpers: `FINAL(value)` and `FINAL_VAR(name)` — end a run through its FINAL gate, or, in a
person's cell, show the answer and keep it in `final_answer`."""

from __future__ import annotations

import html

from IPython import get_ipython

from rlm_kernel.output import kernel_display
from rlm_kernel.repl import citations as citemod
from rlm_kernel.repl import found_citations
from rlm_kernel.repl.errors import ReplError
from rlm_kernel.repl.gate import rejection
from rlm_kernel.repl.state import ReplState
from rlm_kernel.repl.translate import translated
from rlm_kernel.sandbox.coerce import exact_str
from rlm_kernel.sandbox.origin import written_by_person

__all__ = ["FINAL", "FINAL_VAR"]


def _text_of(answer: object) -> str:
    """FINAL's text: str as is, numbers by str(), anything else by repr() (run here, in the cell)."""
    kind = type(answer)
    if issubclass(kind, str):
        return exact_str(answer, "FINAL")
    if kind in (int, float, bool):
        return str(answer)
    return exact_str(repr(answer), "repr() of the answer")


def cited(state: ReplState, cite: object, how: str, text: str = "") -> list[dict] | None:
    """The verified citations of `cite`, or None when the answer must wait: some could not be verified and
    the root has not been told yet (told once; after that the verified ones are kept). A run asked for
    citations (--cite) whose answer `text` gives none gets the lines its code printed that back it, if the
    kernel finds any (`found_citations`); else it is told once."""
    run = state.run
    if cite is None:
        if run is not None and state.options.cite:
            loaded = state.protected.get("__loaded_context__")
            printed = state.session.printed_so_far() if state.session is not None else ""
            found = found_citations.for_run(text, run.gate, loaded, printed)
            if found:
                return found
            if not run.cite_feedback_given:
                run.cite_feedback_given = True  # told once, then accepted without
                run.rejections.append(citemod.MISSING.format(how=how))
                return None
        return []
    result = citemod.check(cite, state.protected.get("__loaded_context__"))
    if result.rejected and run is None:
        raise ReplError(
            f"{how}: {len(result.rejected)} citation(s) could not be verified: "
            + "; ".join(result.rejected[:10])
            + ". Quote text exactly as it appears in `context`, or give (start, end) spans inside it"
        )
    if result.rejected and run is not None and not run.cite_feedback_given:
        run.cite_feedback_given = True
        run.rejections.append(citemod.feedback(result, how))
        return None
    return result.accepted


def _finish(
    state: ReplState, ns: dict, answer: object, how: str, name: str | None = None, cite: object = None
) -> str:
    text = _text_of(answer)
    if state.run is not None:
        gate = state.run.gate
        computed = gate.final_drawn if name is None else name in gate.flow.names
        scoped = gate.final_scoped if name is None else gate.in_scope(name)
        why = gate.problem(text, computed, answer, scoped)
        if why is not None:
            # fed back once, with the turn's notes (not also printed into the block's output)
            blind = state.run.successes > 0 and not gate.context_calls
            state.run.rejections.append(rejection(how, blind, why))
            return text
        verified = cited(state, cite, how, text)
        if verified is None:
            return text
        state.run.final, state.run.final_set = text, True
        state.run.final_value = answer
        state.run.citations = verified
        return text
    with translated(state, how, error=ReplError, model_call=False):
        verified = cited(state, cite, how) or []
    ns["final_answer"] = text
    if cite is not None:
        ns["final_citations"] = verified
    # the kernel's own box only for a FINAL the person's cell wrote (trust follows the code: a function,
    # partial or agent cell of model-written code calling FINAL gets plain text, sanitised like its output)
    _display_final(text, verified, own=written_by_person(how, state.protected.get(how)))
    return text


def FINAL(state: ReplState, ns: dict, answer: object, cite: object = None) -> None:  # noqa: N802 - the RLM reference name
    """Give the final answer. In a root-loop run this ends the run (once a sub-model call has succeeded);
    in a notebook cell it displays the answer prominently and stores it in `final_answer`.
    cite=[...]: quotes (str) or (start, end) spans of `context` backing the answer; each is checked
    against `context` (whitespace aside) and located (file, page, line): `rlm_result.citations`, or
    `final_citations` in a notebook cell."""
    _finish(state, ns, answer, "FINAL", cite=cite)


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


def _display_final(text: str, citations: list[dict] | None = None, *, own: bool = True) -> None:
    cites_text = f"\n{citemod.render_text(citations)}" if citations else ""
    cites_html = citemod.render_html(citations) if citations else ""
    if get_ipython() is None:
        print(f"FINAL ANSWER: {text}{cites_text}")
        return
    if not own:
        from IPython.display import display

        display(
            {
                "text/plain": "FINAL() called by model-written code (or through a wrapper), not your cell; "
                f"kept in final_answer:\n{text}{cites_text}"
            },
            raw=True,
        )
        return
    body = html.escape(text)
    # the kernel's own display (styled: no cell output can be, output/sanitise.py), saying where it came from
    kernel_display(
        {
            "text/plain": f"FINAL ANSWER:\n{text}{cites_text}",
            "text/html": (
                "<div style='border:2px solid #2e7d32;border-radius:6px;padding:8px 12px;margin:4px 0'>"
                "<div style='font-weight:bold;color:#2e7d32'>FINAL ANSWER</div>"
                "<div style='font-size:0.85em;color:#57606a'>rlm kernel · FINAL() called in this cell"
                " (not a run's gated answer); kept in final_answer</div>"
                f"<div style='white-space:pre-wrap;font-size:1.1em'>{body}</div>{cites_html}</div>"
            ),
        }
    )
