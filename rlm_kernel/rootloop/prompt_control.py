"""Which system prompt a run sends: the default (or `system_prompt=`), its tools and answer type, then
`system_prompt_extra=`; and `%rlm prompt`, which prints the default prompt for the configured model."""

from __future__ import annotations

import rlm_kernel.rootloop.answer_types as answer_types
import rlm_kernel.rootloop.tools as tools
from rlm_kernel import magics
from rlm_kernel.repl import citations
from rlm_kernel.repl.state import RunOptions
from rlm_kernel.rootloop.prompt import system_prompt, window_tokens

__all__ = ["PROMPT_HELP", "PromptText", "build", "show_prompt"]

PROMPT_HELP = "print the root's default system prompt (for the configured model's window)"


def build(
    options: RunOptions,
    window: int,
    answer_tokens: int,
    corpus: bool = False,
    errors: str = "raise",
    example_file: str | None = None,
    question: str = "",
    context: str = "",
) -> str:
    """The system prompt of a run with `options` (`corpus`: the context is several files, `example_file`
    one of them for the prompt's example; `errors`: the `errors_in_model_code` setting; `question`: the
    run's, and `context` the run's text, for the search example's word)."""
    base = (
        options.system_prompt
        if options.system_prompt is not None
        else system_prompt(window, answer_tokens, corpus, errors, example_file, question, context)
    )
    parts = [base.rstrip()]
    if options.tools:
        parts.append(tools.describe(options.tools))
    if options.returns is not None:
        parts.append(answer_types.prompt_line(options.returns))
    if options.cite:
        parts.append(citations.PROMPT)
    if options.system_prompt_extra:
        parts.append(options.system_prompt_extra.strip())
    return "\n\n".join(parts) + "\n"


class PromptText:
    """A prompt shown as plain text (`%rlm prompt`)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def show_prompt(line: str = "") -> PromptText:
    """`%rlm prompt`: the default system prompt, stating the configured sub-model's window."""
    window, answer, errors = 128_000, 1024, "raise"
    try:
        from rlm_kernel import llm

        config = llm.get_client().config
        window = window_tokens(config)
        answer = int(getattr(config, "max_tokens", 1024) or 1024)
        errors = str(getattr(config, "errors_in_model_code", "raise"))
    except Exception:  # noqa: BLE001 - no configured client: the default window
        pass
    return PromptText(system_prompt(window, answer, errors=errors))


magics.register_rlm_subcommand("prompt", show_prompt, PROMPT_HELP)
