"""The cells the MCP server writes itself. An agent's values enter them only as data — the `repr` of a
checked str, int, float or bool, or a checked identifier — never as code, so these cells may use what model
code may not (`rlm_run`, `%rlm budget`) without handing the agent the person's trust. The agent's own code
goes through `run_cell`, as model-written code. Cell names may not start with `_` (the sandbox's policy), so
the last run is kept in the notebook as `mcp_result`, where the person sees it too."""

from __future__ import annotations

import keyword
import math

from rlm_kernel.errors import RLMError

__all__ = [
    "RESULT",
    "ArgumentRefused",
    "budget",
    "context_summary",
    "get_variable",
    "identifier",
    "load_context",
    "rlm",
    "trajectory_html",
    "trajectory_records",
    "variables",
]

RESULT = "mcp_result"  # the last `rlm` tool run's RLMResult, in the notebook's namespace

_REPORT = (
    (
        "print(repr({'answer': R.answer_text, 'answer_kind': R.answer_kind, 'termination': R.termination, "
        "'message': R.message, 'iterations': R.iterations, 'calls': R.calls, 'tokens': R.tokens, "
        "'cost_usd': R.cost, "
        "'citations': [str(c) for c in (R.citations if hasattr(R, 'citations') else [])], "
        "'turns': [{'index': t.index, 'code': str(t.code or '')[:1500], "
        "'output': str(t.stdout or '')[:1500], 'error': str(t.error or ''), 'final': str(t.final or '')} "
        "for t in R.trajectory if t.kind == 'turn']}))"
    )
    .replace("R.", RESULT + ".")
    .replace("(R,", f"({RESULT},")
)


class ArgumentRefused(RLMError):
    """A tool argument of the wrong type or shape; the message says which and what is expected."""


def _text(value: object, what: str, *, limit: int = 100_000) -> str:
    if type(value) is not str or not value.strip():
        raise ArgumentRefused(f"{what} must be a non-empty string")
    if len(value) > limit:
        raise ArgumentRefused(f"{what} is longer than {limit:,} characters")
    return value


def _number(value: object, what: str, *, low: float, high: float, integer: bool = False) -> float:
    ok = type(value) is int or (type(value) is float and not integer and math.isfinite(value))
    if not ok or not low <= value <= high:  # type: ignore[operator]
        kind = "a whole number" if integer else "a number"
        raise ArgumentRefused(f"{what} must be {kind} from {low:g} to {high:g}")
    return value  # type: ignore[return-value]


def identifier(name: object) -> str:
    """A notebook variable's name, or ArgumentRefused."""
    if type(name) is not str or not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise ArgumentRefused("name must be a variable of the notebook (letters, digits and _, no leading _)")
    return name


def load_context(source: object, append: object = False) -> str:
    if type(append) is not bool:
        raise ArgumentRefused("append must be true or false")
    return f"load_context({_text(source, 'source', limit=4096)!r}, append={append!r})"


def rlm(
    question: object, max_iterations: object = 12, budget_usd: object = None, cite: object = False
) -> str:  # noqa: E501
    turns = int(_number(max_iterations, "max_iterations", low=1, high=100, integer=True))
    args = [repr(_text(question, "question")), f"max_iterations={turns!r}"]
    if budget_usd is not None:
        args.append(f"budget_usd={float(_number(budget_usd, 'budget_usd', low=0, high=1000))!r}")
    if type(cite) is not bool:
        raise ArgumentRefused("cite must be true or false")
    if cite:
        args.append("cite=True")
    return f"{RESULT} = rlm_run({', '.join(args)})\n{_REPORT}"


def trajectory_records() -> str:
    return f"print(repr({RESULT}.records()))"


def trajectory_html() -> str:
    return RESULT


def variables() -> str:
    return "SHOW_VARS()"


def get_variable(name: object, max_chars: object = 4000) -> str:
    limit = int(_number(max_chars, "max_chars", low=1, high=200_000, integer=True))
    return (
        f"print((lambda t: t[:{limit}] + "
        f"(f'\\n… ({{len(t):,}} characters in all)' if len(t) > {limit} else ''))"
        f"(repr(repl_get({identifier(name)!r}))))"
    )


def budget() -> str:
    return "%rlm budget"


def context_summary() -> str:
    return (
        "print(f'{len(context):,} characters in {len(context_files)} files')\n"
        "print('\\n'.join(f'{p}  [{s}:{e}]' for p, (s, e) in list(context_files.items())[:200]))"
    )
