"""Compaction: when a run's root history would pass a token threshold, older turns become a model-written
summary instead of being dropped.

Setting `compaction_tokens` (`%rlm set compaction_tokens=N`, `RLM_COMPACTION_TOKENS`, TOML): the estimated
tokens of the root's messages above which the turns before the last one are summarised (default: half the
stated context window; `off` disables it). The summary call is a root-model request like any turn's — charged
to the run's budget, counted in its usage, recorded in the trajectory as a turn of kind `"compaction"` — and
its text is appended to the first message from then on. A failed summary call leaves the history as it was
(the `history_turns` window still applies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlm_kernel.llm.config import register_setting
from rlm_kernel.rootloop.steps import RootRequest, RunSteps
from rlm_kernel.rootloop.trajectory import Turn, Usage

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["SUMMARY_SYSTEM", "maybe_compact", "register_compaction_setting", "threshold", "tokens_of"]

_KEEP_MESSAGES = 2  # the last turn (the root's reply and its feedback) stays verbatim
_PER_MESSAGE_CHARS = 6000
SUMMARY_SYSTEM = (
    "You compress the working notes of an agent that answers a question by running Python code over a large "
    "context. Write a short summary of the turns below: what was tried, what the code found (keep exact "
    "numbers, names, offsets and variable names), what failed and why, and what is left to do. Do not "
    "answer the question yourself and do not write code blocks."
)


def _parse(value: object) -> int | None:
    text = str(value).strip().lower().replace("_", "").replace(",", "")
    if text in ("off", "none", "0", ""):
        return 0
    try:
        tokens = int(text)
    except ValueError:
        raise ValueError(f"compaction_tokens must be a number of tokens or 'off', got {value!r}") from None
    if tokens < 1000:
        raise ValueError(f"compaction_tokens must be at least 1000 tokens (or 'off'), got {tokens}")
    return tokens


def register_compaction_setting() -> None:
    """Make `compaction_tokens` a setting (`%rlm set`, env, TOML)."""
    register_setting(
        "compaction_tokens",
        _parse,
        None,
        "root history size in tokens above which older turns are summarised (≥ 1000, or off; default: half "
        "the context window)",
    )


def threshold(config: object) -> int:
    """The compaction threshold in tokens for `config` (0: off)."""
    from rlm_kernel.rootloop.prompt import window_tokens

    extra = getattr(config, "extra", None) or {}
    value = extra.get("compaction_tokens")
    if value is None:
        return window_tokens(config) // 2
    return int(value)


def tokens_of(messages: Sequence[dict]) -> int:
    """The estimated tokens of some chat messages (the LLM layer's estimate, 4 characters a token)."""
    from rlm_kernel.llm.tiers import estimate_tokens

    return sum(estimate_tokens(str(m.get("content", ""))) + 4 for m in messages)


def _transcript(messages: Sequence[dict], earlier: str) -> str:
    parts = [f"Summary of the turns before these:\n{earlier}"] if earlier else []
    for m in messages:
        who = "AGENT" if m.get("role") == "assistant" else "RESULT"
        text = str(m.get("content", ""))
        if len(text) > _PER_MESSAGE_CHARS:
            text = text[: _PER_MESSAGE_CHARS // 2] + "\n…\n" + text[-_PER_MESSAGE_CHARS // 2 :]
        parts.append(f"--- {who} ---\n{text}")
    return "\n\n".join(parts)


def maybe_compact(run: Any, index: int) -> RunSteps:
    """Before turn `index` of `run` (a loop `_Run`): summarise the older turns if the history is too big.

    Yields the summary request (so a concurrent driver overlaps it like any root call); on success the
    compacted messages leave `run.history`, the summary goes to `run.summary`, and a `"compaction"` turn with
    the call's usage joins `run.turns`.
    """
    import time

    from rlm_kernel import llm
    from rlm_kernel.errors import RLMError

    client = llm.get_client()
    limit = threshold(client.config)
    if not limit or len(run.history) <= _KEEP_MESSAGES or tokens_of(run.messages()) <= limit:
        return
    older = run.history[:-_KEEP_MESSAGES]
    turns = len(older) // 2
    started = time.monotonic()
    request = RootRequest(
        [{"role": "user", "content": _transcript(older, run.summary)}],
        run.options.model or getattr(client.config, "root_model", None),
        SUMMARY_SYSTEM,
        run.state.budget,
    )
    try:
        completion = yield request
    except (llm.BudgetExceeded, RLMError) as err:  # visible, and the run goes on uncompacted
        note = f"compaction skipped: the summary call failed: {err}"
        run.turns.append(Turn(index=index, reply="", note=note, kind="compaction"))
        return
    summary = str(completion.text).strip()
    run.summary = summary
    run.compacted += turns
    run.history = run.history[-_KEEP_MESSAGES:]
    run.turns.append(
        Turn(
            index=index,
            reply=summary,
            root_usage=Usage.of([completion]),
            seconds=time.monotonic() - started,
            note=f"summarised {turns} earlier turn(s): the history passed {limit:,} tokens",
            kind="compaction",
        )
    )
