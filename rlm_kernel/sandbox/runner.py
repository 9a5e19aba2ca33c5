"""`run_source`: run one block of restricted code outside IPython (root loop, sub-RLMs); report the outcome.

Output is captured, limits apply, the last expression's repr is kept; errors are a line or a short traceback.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import itertools
import linecache
import traceback
from typing import Any

from rlm_kernel.sandbox.data.figures import flush_figures
from rlm_kernel.sandbox.error_text import message
from rlm_kernel.sandbox.errors import CellTimeout, SandboxError, add_name_suggestion
from rlm_kernel.sandbox.filenames import is_sandboxed_filename
from rlm_kernel.sandbox.limits import cell_limits, check_source_size
from rlm_kernel.sandbox.origin import register_model_filename
from rlm_kernel.sandbox.policy import restrict_ast
from rlm_kernel.sandbox.session import SandboxSession

__all__ = ["ExecOutcome", "run_source", "format_user_traceback"]

_BLOCKS = itertools.count(1)
_MAX_REPR = 100_000


@dataclasses.dataclass
class ExecOutcome:
    """What one block produced: printed text, the repr of its last expression, and an error text (or None)."""

    stdout: str
    value_repr: str | None
    error: str | None


def format_user_traceback(exc: BaseException) -> str:
    """A traceback showing only the frames of restricted user code, then the exception line.

    The message is computed where the cell's time limit can stop it (`error_text.message`): CellTimeout
    propagates when it does."""
    if isinstance(exc, (SandboxError, CellTimeout)):
        return f"{type(exc).__name__}: {exc}"  # the sandbox's own text
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_sandboxed_filename(f.filename)]
    lines = []
    if frames:
        lines.append("Traceback (most recent call last):")
        for frame in frames:
            where = "" if frame.name == "<module>" else f", in {frame.name}"
            lines.append(f"  line {frame.lineno}{where}")
            if frame.line:
                lines.append(f"    {frame.line.strip()}")
    detail = message(exc)
    lines.append(f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__)
    return "\n".join(lines)


def _register_source(filename: str, source: str) -> None:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def run_source(
    source: str,
    namespace: dict[str, Any],
    session: SandboxSession,
    *,
    filename: str = "<repl>",
    model: bool = False,
) -> ExecOutcome:
    """Check, compile and run `source` in `namespace` under the session's limits.

    With `model=True` the code is model-written: its code objects carry a registered model filename, so
    whatever it defines stays untrusted wherever it runs (`sandbox.origin`).
    Variables set before an error stay in `namespace`. Never raises for problems in the code itself.
    """
    name = f"{filename}#{next(_BLOCKS)}"
    if model:
        register_model_filename(name)
    buffer = io.StringIO()
    value_repr: str | None = None
    error: str | None = None
    try:
        check_source_size(source, session.limits)
        tree = ast.parse(source, filename=name)
    except SandboxError as exc:
        return ExecOutcome("", None, f"SandboxError: {exc}")
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno else ""
        text = (exc.text or "").strip()
        snippet = f"{text[:60]!r} — " if text else ""
        return ExecOutcome("", None, f"{type(exc).__name__}: {where}{snippet}{exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:
        return ExecOutcome("", None, f"{type(exc).__name__}: the block could not be parsed ({exc})")
    _register_source(name, source)
    try:
        tree = restrict_ast(tree, filename=name, limits=session.limits)
    except SandboxError as exc:
        return ExecOutcome("", None, f"SandboxError: {exc}")
    last: ast.expr | None = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop().value
    session.push_capture(buffer)
    try:
        with cell_limits(session):
            try:
                # dont_inherit: not this module's `from __future__ import annotations` (string annotations)
                code = compile(tree, name, "exec", dont_inherit=True)
                exec(code, namespace)  # noqa: S102 - restricted code, checked above
                if last is not None:
                    expr = compile(ast.Expression(last), name, "eval", dont_inherit=True)
                    value = eval(expr, namespace)  # noqa: S307
                    if value is not None and not session.shown.consume(value):  # SHOW_VARS(): printed already
                        value_repr = repr(value)
                        if len(value_repr) > _MAX_REPR:
                            size = len(value_repr)
                            value_repr = value_repr[:_MAX_REPR] + f"... [repr truncated: {size} chars]"
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - report everything the block raised
                add_name_suggestion(exc)  # "Did you mean: 'x'?", as a person's cell shows it (shell.py)
                try:
                    error = format_user_traceback(exc)
                except CellTimeout as stopped:  # the message ran past the limit (a C repr of the value)
                    error = f"CellTimeout: {stopped}"
            flush_figures(session)  # figures the block left open: a line of text each, then closed
    except CellTimeout as exc:  # fired between the block and the end of cell_limits
        error = f"CellTimeout: {exc}"
    finally:
        session.pop_capture()
    return ExecOutcome(buffer.getvalue(), value_repr, error)
