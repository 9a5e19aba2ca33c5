"""Multi-turn runs: `%%rlm --continue` / `rlm_run(..., continue_from=rlm_result)` ask a follow-up in the
conversation and namespace of an earlier run, on the same budget.

A finished run's namespace, REPL state and budget are kept here, keyed by its `RLMResult` (not on the
result, where `vars()`, `copy` or `dataclasses.asdict` in a cell could reach them) for as long as the result
lives. The result keeps the conversation so far; `RLMResult.history` shows it as role/content dicts. A
follow-up run sends the earlier conversation first, then its own question; the namespace keeps every
variable.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

__all__ = [
    "Session",
    "add_history",
    "counts_note",
    "check",
    "remember",
    "session_of",
    "follow_up_message",
    "history_of",
    "join_users",
    "prior_messages",
    "transcript",
]


@dataclass
class Session:
    """What a follow-up run reuses: the namespace and its state, the budget, whether it was `--shared`, and
    the FINAL gate's evidence (what the earlier turns computed from `context` still counts)."""

    ns: dict
    state: object
    budget: object
    shared: bool
    loaded: object
    gate: object = None


_sessions: dict[int, tuple[weakref.ref, Session]] = {}


def remember(result: object, session: Session) -> None:
    """Keep `session` for as long as `result` lives."""
    key = id(result)
    _sessions[key] = (weakref.ref(result), session)
    weakref.finalize(result, _sessions.pop, key, None)


def session_of(result: object) -> Session | None:
    """The session of `result`, or None."""
    entry = _sessions.get(id(result))
    if entry is None or entry[0]() is not result:
        return None
    return entry[1]


def check(value: object) -> object:
    """`value` if it is a run result that can be continued, else ValueError saying what to pass."""
    # only results of runs are registered (by identity), so the registry alone decides; the type is named for
    # the message (trajectory imports this module for `RLMResult.history`)
    if session_of(value) is None and type(value).__name__ != "RLMResult":
        raise ValueError(
            "continue_from must be the RLMResult of an earlier run (e.g. rlm_result), "
            f"got {type(value).__name__ if type(type(value)) is type else 'object'}"
        )
    if session_of(value) is None:
        raise ValueError("continue_from: this result cannot be continued (it was not made by rlm_run/%%rlm)")
    return value


def follow_up_message(question: str, previous: object) -> str:
    """The first user message of a follow-up run."""
    from rlm_kernel.rootloop.answer_types import text_of

    answer = getattr(previous, "answer", None)
    said = ""
    if answer is not None:
        try:
            said = f"Your previous answer was: {text_of(answer)[:2000]}\n\n"
        except Exception:  # noqa: BLE001 - the answer's text is only a reminder
            said = ""
    return (
        f"{said}Follow-up question: {question}\n\n"
        "`context` and every variable from the earlier turns are still in the namespace (SHOW_VARS() lists "
        "them). Reply with a ```repl block."
    )


def prior_messages(previous: object) -> list[dict]:
    """The earlier conversation a follow-up sends first."""
    return [dict(m) for m in previous._history]


def transcript(prior: list[dict], first: str, run: object) -> tuple[dict, ...]:
    """The conversation after a run: the earlier one, this run's first message (with its compaction
    summary), its turns (and the reply that ended it), as role/content dicts in order (consecutive user
    messages joined)."""
    from rlm_kernel.rootloop.textcut import truncate

    messages = [*prior, {"role": "user", "content": first}, *run.history]
    # turns already in `run.history` (fed back), counting those compaction summarised away
    fed = run.compacted + len(run.history) // 2
    ask = getattr(run, "best_effort_request", None)
    for turn in [t for t in run.turns if t.kind == "turn"][fed:]:
        if ask and turn is run.turns[-1] and turn.code is None and turn.note.startswith("best-effort"):
            messages.append({"role": "user", "content": ask})
        messages.append({"role": "assistant", "content": truncate(turn.reply, 8000)})
        if turn.final is None:
            messages.append(
                {"role": "user", "content": f"[turn {turn.index} output]\n{truncate(turn.stdout, 2000)}"}
            )
    return tuple(join_users(messages))


def join_users(messages: list[dict]) -> list[dict]:
    """`messages` with consecutive user messages joined into one (chat servers want roles to alternate)."""
    out: list[dict] = []
    for m in messages:
        if out and out[-1]["role"] == m["role"] == "user":
            out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + m["content"]}
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


_HISTORY_COUNT = "__history_count__"


def add_history(ns: dict, state: object, messages: list[dict]) -> int:
    """Keep a finished run's conversation in its namespace as the next `history_N` (the first also as
    `history`), as the reference library keeps its persistent runs' histories; returns N."""
    protected = state.protected  # type: ignore[attr-defined]
    count = protected.get(_HISTORY_COUNT)
    count = count if isinstance(count, int) else 0
    copies = [{"role": str(m.get("role", "")), "content": str(m.get("content", ""))} for m in messages]
    ns[f"history_{count}"] = copies
    if count == 0 and "history" not in ns:  # a notebook's own `history` is left alone
        ns["history"] = copies
    protected[_HISTORY_COUNT] = count + 1
    return count


def counts_note(state: object) -> str:
    """What the root is told about the contexts and histories loaded (as the reference's user prompt)."""
    protected = getattr(state, "protected", {})
    contexts = protected.get("__context_count__")
    histories = protected.get(_HISTORY_COUNT)
    notes = []
    if isinstance(contexts, int) and contexts > 1:
        notes.append(
            f"Note: {contexts} contexts are loaded (context_0 through context_{contexts - 1}; `context` is "
            "context_0)."
        )
    if isinstance(histories, int) and histories == 1:
        notes.append(
            "Note: 1 earlier conversation is in the `history` variable (a list of role/content dicts)."
        )
    elif isinstance(histories, int) and histories > 1:
        notes.append(
            f"Note: {histories} earlier conversations are in history_0 through history_{histories - 1} "
            "(lists of role/content dicts; `history` is history_0)."
        )
    return "\n".join(notes)


def history_of(result: object) -> list[dict]:
    """`RLMResult.history`: copies of the conversation's messages."""
    return [dict(m) for m in result._history]
