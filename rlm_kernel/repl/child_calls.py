"""The record of the model calls a helper made (`ChildCall`s of the run) and what the FINAL rule asks of them.

`record` appends a call to the running run (counting the successes and the calls that saw `context`);
`sees_context` tells whether a prompt carried part of the run's `context`.
"""

from __future__ import annotations

from rlm_kernel import llm
from rlm_kernel.llm.tiers import resolve_model
from rlm_kernel.repl.evidence import Seen
from rlm_kernel.repl.gate import shares_text
from rlm_kernel.repl.state import ChildCall, ReplState

__all__ = ["PREVIEW_CHARS", "default_model", "preview", "record", "sees_context"]

PREVIEW_CHARS = 200


def preview(value: object) -> str:
    """The first `PREVIEW_CHARS` of a prompt or an answer, for the trajectory and the fan-out labels."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def default_model(kind: str) -> str | None:
    """The model a call of helper `kind` goes to when none is named (the child tier, or the root's)."""
    try:
        config = llm.get_client().config
        if kind.startswith("rlm_query"):
            root = getattr(config, "root_model", None)
            return root or resolve_model(None, role="synthesis", prompt_tokens=0, config=config)[1]
        return resolve_model(None, role="map", prompt_tokens=0, config=config)[1]
    except Exception:  # noqa: BLE001 - a name for the record only; no provider configured, say so
        return None


def record(
    state: ReplState, call: ChildCall, items: list[tuple[int, tuple[str, ...], str]] | None = None
) -> None:
    """Add `call` to the running run's record (nothing outside a run). A call that saw part of `context`
    is also kept as possible evidence (`repl.evidence`): its `items` — (number from 1, prompt texts,
    answer) — or else its own prompt and answer."""
    if not call.ok and call.failed == 0:
        call.failed = call.items
    if call.model is None:  # the trajectory names a model even for a call that never answered
        call.model = default_model(call.kind)
    if state.run is not None:
        state.run.calls.append(call)
        if call.failed < call.items:
            state.run.successes += 1
            if call.saw_context:
                state.run.gate.context_calls += 1
                state.run.gate.hear(call.response or "")
                if items is None:
                    items = [(1, (call.prompt,), call.response)] if call.prompt and call.ok else []
                if items:
                    state.run.seen.append(Seen(call, items))


def sees_context(state: ReplState, *texts: object) -> bool:
    """Whether any of `texts` contains part of the run's `context` (only asked during a run)."""
    if state.run is None:
        return False
    loaded = state.protected.get("__loaded_context__")
    source = state.run.gate.source_for(getattr(loaded, "value", None))
    if not source.strip():  # nothing loaded: the question is the whole task, any call counts
        state.run.gate.no_context = True
        return True
    besides = state.run.gate.question
    return any(isinstance(t, str) and shares_text(t, source, besides=besides) for t in texts)
