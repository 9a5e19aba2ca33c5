"""The IPython shell of the rlm kernel: where every cell meets the sandbox.

`RLMShell.transform_ast` rewrites allowed magics, then `restrict_ast` (fails closed); cells run in a
namespace from `new_namespace`, under `cell_limits`, with tracebacks cut down to the cell's own lines.
What a cell's displays cost is `cell_output`'s; how its errors are cut to the output cap, `cell_errors`'s.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import logging
import sys
import types
from typing import Any

from ipykernel.compiler import XCachingCompiler
from ipykernel.zmqshell import ZMQInteractiveShell
from IPython.core.error import UsageError
from IPython.core.history import HistoryManager
from IPython.core.oinspect import OInfo
from traitlets import Any as AnyTrait
from traitlets import Dict, Type

from rlm_kernel import magics
from rlm_kernel.cell_error_copy import plain_syntax_error, text_copy, timeout_copy
from rlm_kernel.cell_errors import (
    Shown,
    cut_chain,
    cut_lines,
    cut_message,
    error_budget,
    error_parts,
    stand_in,
)
from rlm_kernel.cell_output import (
    RLMDisplayFormatter,
    RLMDisplayHook,
    RLMDisplayPublisher,
    RLMPayloadManager,
    capped,
)
from rlm_kernel.introspect import LookupRefused, resolve_path
from rlm_kernel.llm import settings_magic  # noqa: F401 - registers %rlm set/show/… when imported
from rlm_kernel.repl import (
    cell_magics,  # noqa: F401 - registers %context and %%rlm when imported
    preload,
)
from rlm_kernel.rootloop import report_magics  # noqa: F401 - registers %rlm view/provenance, starts the ledger
from rlm_kernel.rootloop.driver import ROOT_LOOP
from rlm_kernel.sandbox import (
    Limits,
    SandboxError,
    SandboxSession,
    cell_limits,
    check_source_size,
    new_namespace,
    register_sandboxed_filename,
    repair_namespace,
    restrict_ast,
)
from rlm_kernel.sandbox.confine import policy_disabled
from rlm_kernel.sandbox.data.figures import flush_figures
from rlm_kernel.sandbox.errors import CellTimeout, add_name_suggestion
from rlm_kernel.sandbox.origin import model_code_running, new_cell, note_cell_code, register_model_filename
from rlm_kernel.sandbox.watch import WriteLog, watching
from rlm_kernel.warnings_display import install_warning_format
from rlm_kernel.widgets import widget_magics as widgets_magics

__all__ = ["RLMCompiler", "RLMShell"]

log = logging.getLogger(__name__)

# Names under which IPython compiles the bodies of %time / %timeit.
MAGIC_BODY_FILENAMES = frozenset({"<timed exec>", "<timed eval>", "<magic-timeit>"})
# The filename restrict_ast gets for those bodies (refusals then quote the offending node, not a cell line).
MAGIC_BODY_SOURCE = "<magic body>"
# What IPython's own init_user_ns puts in the namespace that a sandboxed cell must not get.
UNSAFE_NS_NAMES = ("get_ipython", "exit", "quit", "open", "__builtin__")


class RLMCompiler(XCachingCompiler):
    """ipykernel's compiler, remembering the filename of the cell being parsed (for restrict_ast)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current_filename = "<cell>"
        self.cell_filenames: set[str] = set(MAGIC_BODY_FILENAMES)

    def get_code_name(self, raw_code: str, code: str, number: int) -> str:
        """A person's cell is named by its source (ipykernel's hash). An agent's cell (sent through
        `rlm-kernel mcp`, run inside `model_code()`) gets a fresh name, recorded as model-written when it is
        compiled: what it defines stays untrusted wherever it runs later (sandbox/origin.py)."""
        if model_code_running():
            self._agent_cells += 1
            return f"<agent cell {number}>#{self._agent_cells}"
        return super().get_code_name(raw_code, code, number)

    _agent_cells = 0

    def __call__(self, source: Any, filename: str, symbol: str, **kwargs: Any) -> types.CodeType:
        """Compile as IPython does, recording the code for the trust checks (origin.note_cell_code: what
        the running cell itself defines)."""
        code = super().__call__(source, filename, symbol, **kwargs)
        note_cell_code(code)
        return code

    def ast_parse(self, source: str, filename: str = "<unknown>", symbol: str = "exec") -> ast.AST:
        # IPython parses %time/%timeit bodies without a filename; they have no source lines of their own
        self.current_filename = filename if filename != "<unknown>" else MAGIC_BODY_SOURCE
        self.cell_filenames.add(self.current_filename)
        try:
            return super().ast_parse(source, filename, symbol)
        except (MemoryError, RecursionError):  # CPython's parser gives up on deeply nested source this way
            raise SyntaxError(
                "the cell is nested too deeply for Python's parser; split the expression into smaller parts"
            ) from None


class RLMShell(ZMQInteractiveShell):
    """ZMQInteractiveShell whose every cell passes the RestrictedPython policy before it runs."""

    displayhook_class = Type(RLMDisplayHook)
    display_pub_class = Type(RLMDisplayPublisher)
    sandbox_session = AnyTrait(help="the SandboxSession of this kernel").tag(config=False)
    watch_writes = False  # set by the kernel for an MCP agent's cell: its writes are recorded (sandbox/watch)
    last_writes: WriteLog | None = None
    sandbox_limits = Dict(
        help=(
            "Sandbox limits that override the RLM_* environment variables, by Limits field name, e.g. "
            "--RLMShell.sandbox_limits cpu_seconds=120 (kernelspec argv) or "
            "c.RLMShell.sandbox_limits = {'cpu_seconds': 120} (ipython_kernel_config.py)."
        )
    ).tag(config=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in MAGIC_BODY_FILENAMES:
            register_sandboxed_filename(name)
        repair_namespace(self.user_ns, self.sandbox_session)
        self._install_hidden_helpers()
        install_warning_format()
        widgets_magics.install(self)  # fan-out controller, budget displays, widget comms
        preload.install(self.user_ns, self, root_loop=ROOT_LOOP)
        self.user_ns_hidden.update({k: v for k, v in self.user_ns.items()})

    # -- output ------------------------------------------------------------------------------------
    def init_display_formatter(self) -> None:
        """Every bundle is cleaned on its way out (cell_output); the kernel's own objects are marked here."""
        self.display_formatter = RLMDisplayFormatter(parent=self)
        self.configurables.append(self.display_formatter)

    def init_payload(self) -> None:
        self.payload_manager = RLMPayloadManager(parent=self)
        self.configurables.append(self.payload_manager)

    # -- namespace ---------------------------------------------------------------------------------
    def init_create_namespaces(self, user_module: Any = None, user_ns: Any = None) -> None:
        if self.sandbox_session is None:
            limits = _limits_from_config(dict(self.sandbox_limits))
            self.sandbox_session = SandboxSession(limits, backstop_marker=_backstop_marker())
        super().init_create_namespaces(None, new_namespace(self.sandbox_session))

    def init_user_ns(self) -> None:
        super().init_user_ns()
        for name in UNSAFE_NS_NAMES:
            self.user_ns.pop(name, None)
            self.user_ns_hidden.pop(name, None)
        from IPython.display import clear_output, display

        extras = {"display": display, "clear_output": clear_output}
        self.user_ns.update(extras)
        self.user_ns_hidden.update(extras)
        self._magic_helpers = magics.make_magic_helpers(self)

    def _install_hidden_helpers(self) -> None:
        """Put the magic helpers in the namespace's private builtins table, never in the namespace itself.

        Rewritten magic calls find them by name (globals, then builtins); `repl_get`, `dir()`, `%who`,
        completion and `SHOW_VARS` only see the namespace. No source can spell their names.
        """
        table = self.user_ns.get("__builtins__")
        if isinstance(table, dict):
            table.update(self._magic_helpers)
        for name in self._magic_helpers:
            self.user_ns.pop(name, None)

    def init_history(self) -> None:
        """History lives in memory: cells never read other sessions' history from the shared sqlite file."""
        self.history_manager = HistoryManager(shell=self, parent=self, hist_file=":memory:")
        self.configurables.append(self.history_manager)

    # -- compile time ------------------------------------------------------------------------------
    def transform_ast(self, node: ast.AST) -> ast.AST:
        """Rewrite magics, apply the sandbox policy; any internal failure rejects the cell (fail closed)."""
        try:
            node = magics.rewrite_magics(node)
            ast.fix_missing_locations(node)
            filename = getattr(self.compile, "current_filename", "<cell>")
            if filename.startswith("<agent cell ") and model_code_running():
                register_model_filename(filename)  # an agent's cell is model-written code (RLMCompiler)
            if policy_disabled():  # RLM_UNSAFE_DISABLE_POLICY=1 (tests of the OS layer only): plain Python
                register_sandboxed_filename(filename)  # still the person's cell: magics work as syntax
                return node
            return restrict_ast(node, filename=filename, limits=self.sandbox_session.limits)
        except (SandboxError, UsageError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - fail closed on anything, including RecursionError
            raise SandboxError(
                f"the sandbox could not check this cell ({type(exc).__name__}: {exc}); it was not run"
            ) from None

    # -- run time ----------------------------------------------------------------------------------
    def should_run_async(self, raw_cell: str, **kwargs: Any) -> bool:
        """As IPython's, but a cell too deeply nested for the compiler is not an error here: it then runs the
        usual way, and its parse reports the nesting (ipykernel sends no execute_reply if this raises)."""
        try:
            return super().should_run_async(raw_cell, **kwargs)
        except (RecursionError, MemoryError):
            return False

    async def run_cell_async(self, raw_cell: str, *args: Any, **kwargs: Any) -> Any:
        """Repair the namespace, refuse oversized sources, then run the cell as IPython does."""
        new_cell()
        self._repair_namespace()
        if policy_disabled():  # RLM_UNSAFE_DISABLE_POLICY=1: the real builtins (marked so repair keeps them)
            self.user_ns["__builtins__"] = {
                **vars(builtins),
                **self._magic_helpers,  # magics still work as syntax: their helpers live in the builtins
                "_rlm_sandbox_builtins": True,
            }
        if kwargs.get("preprocessing_exc_tuple") is None:
            try:
                check_source_size(raw_cell, self.sandbox_session.limits)
            except SandboxError as exc:
                kwargs["preprocessing_exc_tuple"] = (type(exc), exc, None)
        self._rlm_last_error = None
        # an MCP agent's cell: its writes to the person's objects are recorded (after the repair above)
        with watching(self.user_ns) if self.watch_writes else contextlib.nullcontext() as writes:
            self.last_writes = writes
            result = await super().run_cell_async(raw_cell, *args, **kwargs)
        # ipykernel builds the execute_reply from str(error): hand it the text already shown (capped, and
        # computed under the cell's limits), never the cell's own exception object.
        shown = self._rlm_last_error
        for attr in ("error_before_exec", "error_in_exec"):
            error = getattr(result, attr, None)
            if error is not None:
                name, text = shown if shown else (type(error).__name__, "")
                setattr(result, attr, stand_in(name, text))
        return result

    def _format_exception_for_storage(
        self, exception: BaseException, filename: str | None = None, running_compiled_code: bool = False
    ) -> dict[str, Any]:
        """What IPython's history keeps of a cell's error: the text already shown (capped, computed under the
        cell's limits). IPython would render the cell's exception object again here, after the cell ended —
        running a cell-defined `__str__` outside its limits."""
        name, text = self._rlm_last_error or (type(exception).__name__, "")
        return {"ename": name, "evalue": text, "traceback": []}

    def _repair_namespace(self) -> None:
        fixed = repair_namespace(self.user_ns, self.sandbox_session)
        self._install_hidden_helpers()
        if fixed:
            log.warning("sandbox namespace repaired: %s", ", ".join(fixed))
        try:
            preload.repair(self.user_ns)
        except Exception:  # noqa: BLE001 - a broken helper repair must not block the cell
            log.exception("preload.repair failed")

    async def run_ast_nodes(self, nodelist: Any, cell_name: str, *args: Any, **kwargs: Any) -> Any:
        with cell_limits(self.sandbox_session):
            try:
                return await super().run_ast_nodes(nodelist, cell_name, *args, **kwargs)
            finally:
                flush_figures(self.sandbox_session)  # plots the cell left open, drawn under its limits

    def user_expressions(self, expressions: dict[str, str]) -> dict[str, Any]:
        """execute_request's user_expressions, each restricted like a cell (IPython's own uses plain eval),
        evaluated and formatted under one cell's limits, their results together under the output cap."""
        out: dict[str, Any] = {}
        session = self.sandbox_session
        with cell_limits(session):
            for key, expr in expressions.items():
                try:
                    code = self._compile_expression(expr)
                    value = eval(code, self.user_global_ns, self.user_ns)  # noqa: S307 - restricted above
                    data, metadata = self.display_formatter.format(value)
                    data, metadata, _ = capped(self, data, metadata)
                    out[key] = {"status": "ok", "data": data, "metadata": metadata}
                except BaseException as exc:  # noqa: BLE001 - reported to the client like IPython does
                    name, text = error_parts(exc, error_budget(session))
                    out[key] = {
                        "status": "error",
                        "ename": name,
                        "evalue": text,
                        "traceback": [f"{name}: {text}"],
                    }
            session.output_dropped = 0  # the cut values say so themselves; no note on the cell's stdout
        return out

    def _compile_expression(self, expr: str) -> types.CodeType:
        try:
            tree = ast.parse(expr, mode="eval")
        except SyntaxError as exc:
            raise SandboxError(f"user expression {expr!r} is not a Python expression: {exc.msg}") from None
        module = ast.Module(body=[ast.Expr(tree.body, lineno=1, col_offset=0)], type_ignores=[])
        ast.fix_missing_locations(module)
        self.compile.current_filename = "<user expression>"
        restricted = self.transform_ast(module)
        stmt = restricted.body[-1] if isinstance(restricted, ast.Module) and restricted.body else None
        if len(restricted.body) != 1 or not isinstance(stmt, ast.Expr):
            raise SandboxError(f"user expression {expr!r} must be a single expression")
        return compile(ast.Expression(stmt.value), "<user expression>", "eval")

    # -- introspection -----------------------------------------------------------------------------
    def _ofind(self, oname: str, namespaces: Any = None) -> OInfo:
        """`obj?` and inspect_request: plain dotted names only, each step through the `_getattr_` guard."""
        oname = oname.strip()
        if not oname.startswith("%"):
            try:
                parent, obj = resolve_path(self.user_ns, oname)
                return _oinfo(obj, "Interactive", parent=parent)
            except LookupRefused:
                pass
        name, cell = oname.lstrip("%"), oname.startswith("%%")
        if name in (magics.allowed_cell_magics() if cell else magics.allowed_line_magics()):
            obj = self.find_cell_magic(name) if cell else self.find_line_magic(name)
            if obj is not None:
                return _oinfo(obj, "rlm magic", ismagic=True)
        return OInfo(ismagic=False, isalias=False, found=False, obj=None, namespace=None, parent=None)

    def complete(self, text: Any, line: Any = None, cursor_pos: Any = None) -> tuple[str, list[str]]:
        """Never used by the rlm kernel (see RLMKernel.do_complete); refuse IPython's evaluating completer."""
        return "", []

    # -- tracebacks --------------------------------------------------------------------------------
    def showtraceback(
        self,
        exc_tuple: Any = None,
        filename: str | None = None,
        tb_offset: int | None = None,
        exception_only: bool = False,
        running_compiled_code: bool = False,
    ) -> None:
        """Show only the cell's own frames: no guard, facade, IPython or kernel frames."""
        try:
            etype, value, tb = self._get_exc_info(exc_tuple)
        except ValueError:
            print("No traceback available to show.", file=sys.stderr)
            return
        if (issubclass(etype, SyntaxError) and plain_syntax_error(value)) or etype is UsageError:
            return super().showtraceback(
                exc_tuple, filename, tb_offset, exception_only, running_compiled_code
            )
        self._prune_chain(value)
        cut_chain(value, error_budget(self.sandbox_session))
        add_name_suggestion(value)  # "Did you mean: 'x'?" from the cell's own names, as plain Python shows
        only = isinstance(value, SandboxError) or exception_only
        try:
            # IPython renders text only: the messages are computed here, where the time limit stops them
            value = text_copy(value)
        except CellTimeout as stopped:
            value, only = timeout_copy(stopped), True
        etype, tb = type(value), value.__traceback__
        if only or tb is None:
            stb = self.InteractiveTB.get_exception_only(etype, value)
            self._showtraceback(etype, value, stb)
            return
        super().showtraceback((etype, value, tb), filename, 0, False, running_compiled_code)

    def _showtraceback(self, etype: Any, evalue: Any, stb: Any) -> None:
        """Send the error under the output cap: the rendered traceback and the message are cut to what is
        left of the cell's output allowance (at least a few kilobytes, so an error is always seen)."""
        budget = error_budget(self.sandbox_session)
        # evalue is text_copy's (or IPython's own SyntaxError/UsageError): its str is plain text
        text = cut_message(str(evalue), budget)
        stb = cut_lines([str(line) for line in stb or []], budget)
        self._rlm_last_error = (getattr(etype, "__name__", "Error"), text)
        super()._showtraceback(etype, Shown(text), stb)

    def _prune_chain(self, value: BaseException) -> None:
        seen: set[int] = set()
        stack: list[BaseException | None] = [value]
        while stack:
            exc = stack.pop()
            if exc is None or id(exc) in seen:
                continue
            seen.add(id(exc))
            exc.__traceback__ = self._cell_frames_only(exc.__traceback__)
            stack += [exc.__cause__, exc.__context__]
            if isinstance(exc, BaseExceptionGroup):
                stack += list(exc.exceptions)

    def _cell_frames_only(self, tb: types.TracebackType | None) -> types.TracebackType | None:
        cells = getattr(self.compile, "cell_filenames", MAGIC_BODY_FILENAMES)
        kept: list[types.TracebackType] = []
        while tb is not None:
            if tb.tb_frame.f_code.co_filename in cells:
                kept.append(tb)
            tb = tb.tb_next
        new: types.TracebackType | None = None
        for item in reversed(kept):
            new = types.TracebackType(new, item.tb_frame, item.tb_lasti, item.tb_lineno)
        return new


def _limits_from_config(overrides: dict[str, Any]) -> Limits:
    """`Limits.from_env()` with traitlets overrides (numbers may be text); unknown names are refused."""
    fields = {f.name: f for f in dataclasses.fields(Limits)}
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise ValueError(
            f"RLMShell.sandbox_limits: unknown limit(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(fields))}"
        )
    values: dict[str, Any] = {}
    for name, raw in overrides.items():
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"RLMShell.sandbox_limits: {name}={raw!r} is not a number") from None
        if number < 0:
            raise ValueError(f"RLMShell.sandbox_limits: {name}={raw!r} is negative; 0 disables a limit")
        values[name] = int(number) if fields[name].type in ("int", int) else number
    return Limits.from_env(**values)


def _oinfo(obj: Any, namespace: str, *, parent: Any = None, ismagic: bool = False) -> OInfo:
    return OInfo(ismagic=ismagic, isalias=False, found=True, obj=obj, namespace=namespace, parent=parent)


def _backstop_marker() -> str | None:
    """A file beside the connection file that outlives a C-loop backstop kill (read at the next start)."""
    try:
        from ipykernel.kernelapp import IPKernelApp

        if IPKernelApp.initialized():
            connection_file = IPKernelApp.instance().abs_connection_file
            if connection_file:
                return connection_file + ".rlm-backstop"
    except Exception:  # noqa: BLE001 - no marker means no restart note, nothing worse
        return None
    return None
