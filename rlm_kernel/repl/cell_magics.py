"""The REPL's magics: `%context [source]` and `%%rlm [options]` (question in the cell body).

Registered through `rlm_kernel.magics` when the kernel's shell imports this module.
"""

from __future__ import annotations

import argparse
import shlex

from IPython.core.error import UsageError

from rlm_kernel import magics
from rlm_kernel.repl import preload
from rlm_kernel.repl.errors import ReplError
from rlm_kernel.repl.recursion import root_loop

__all__ = ["context_magic", "parse_rlm_line", "rlm_cell_magic"]

CONTEXT_DOC = "%context [source]: load the context from a path, directory or glob; alone, summarise it"
RLM_DOC = (
    "%%rlm [--model M] [--child-model M] [--max-iterations N] [--max-depth D] [--budget-usd X] [--shared] "
    "[--continue] [--tools F,G] [--returns T] [--system NAME] [--system-extra NAME] [--no-best-effort] "
    "[--cite]: "
    "run the root loop on the question in the cell body; the result is kept in `rlm_result`"
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"%%rlm: {message}. Usage: {self.format_usage().strip()}")


def _parser() -> _Parser:
    p = _Parser(prog="%%rlm", add_help=False)
    p.add_argument("--model", default=None)
    p.add_argument("--child-model", default=None)
    p.add_argument("--max-iterations", type=int, default=None)
    p.add_argument("--max-depth", type=int, default=None)
    p.add_argument("--budget-usd", type=float, default=None)
    p.add_argument("--max-no-code-turns", type=int, default=None)
    p.add_argument("--output-chars", type=int, default=None)
    p.add_argument("--shared", action="store_true")
    p.add_argument("--continue", dest="continue", action="store_true")
    p.add_argument("--tools", default=None)
    p.add_argument("--returns", default=None)
    p.add_argument("--system", default=None)
    p.add_argument("--system-extra", default=None)
    p.add_argument("--no-best-effort", action="store_true")
    p.add_argument("--cite", action="store_true")
    return p


def parse_rlm_line(line: str) -> dict[str, object]:
    """The options given on the `%%rlm` line, as `rlm_run` keyword arguments (unset ones left out)."""
    try:
        argv = shlex.split(line)
    except ValueError as err:
        raise UsageError(f"%%rlm: cannot parse the options line ({err})") from None
    args = vars(_parser().parse_args(argv))
    flags = ("shared", "continue", "no_best_effort", "cite")
    options = {k: v for k, v in args.items() if v is not None and k not in flags}
    options.update({k: True for k in flags if args[k]})
    return options


def context_magic(line: str) -> object:
    """`%context` alone shows a summary of the loaded context; `%context SOURCE` loads SOURCE."""
    ns, state = preload.notebook()
    source = line.strip()
    if len(source) >= 2 and source[0] == source[-1] and source[0] in "'\"":
        source = source[1:-1]
    if not source:
        loaded = state.protected.get("__loaded_context__")
        if loaded is None:
            return "no context loaded: use %context PATH or load_context(source)"
        return loaded.summary()
    return ns["load_context"](source) if callable(ns.get("load_context")) else None


def rlm_cell_magic(line: str, cell: str) -> None:
    """Run the root loop on the cell's question, showing it live; stores the RLMResult in `rlm_result`."""
    ns, state = preload.notebook()
    loop = root_loop(state, "%%rlm")
    question = cell.strip()
    if not question:
        raise UsageError("%%rlm: write the question in the cell body, below the %%rlm line")
    try:
        options, previous = loop.magic_args(parse_rlm_line(line), ns, set(state.protected))
        opts = state.options.with_(**options).check()
    except (TypeError, ValueError) as err:
        raise UsageError(f"%%rlm: {err}") from None
    try:
        result = loop.run_from_namespace(state, ns, question, None, opts, continue_from=previous)
    except ReplError as err:
        raise ReplError(str(err)) from None
    ns["rlm_result"] = result
    return None


magics.register_line_magic("context", context_magic, CONTEXT_DOC)
magics.register_cell_magic("rlm", rlm_cell_magic, RLM_DOC)
