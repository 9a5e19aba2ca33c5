"""The IPython shell of the rlm kernel: where every cell meets the sandbox.

`RLMShell.transform_ast` rewrites allowed magics, then `restrict_ast` (fails closed); cells run in a
namespace from `new_namespace`, under `cell_limits`, with tracebacks cut down to the cell's own lines.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import logging
import sys
import types
from typing import Any

from ipykernel.compiler import XCachingCompiler
from ipykernel.displayhook import ZMQShellDisplayHook
from ipykernel.zmqshell import ZMQDisplayPublisher, ZMQInteractiveShell
from IPython.core.error import UsageError
from IPython.core.history import HistoryManager
from IPython.core.oinspect import OInfo
from traitlets import Any as AnyTrait
from traitlets import Dict, Type

from rlm_kernel import magics
from rlm_kernel.introspect import LookupRefused, resolve_path
from rlm_kernel.llm import settings_magic  # noqa: F401 - registers %rlm set/show/… when imported
from rlm_kernel.repl import (
    cell_magics,  # noqa: F401 - registers %context and %%rlm when imported
    preload,
)
from rlm_kernel.rootloop import (
    provenance,
    report_magics,  # noqa: F401 - registers %rlm view/provenance, starts the ledger
)
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
from rlm_kernel.sandbox.errors import add_name_suggestion
from rlm_kernel.warnings_display import install_warning_format
from rlm_kernel.widgets import widget_magics as widgets_magics

__all__ = ["RLMCompiler", "RLMDisplayHook", "RLMDisplayPublisher", "RLMShell"]

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


def _capped(shell: Any, data: Any, metadata: Any) -> tuple[Any, Any, int]:
    """A display bundle under the cell's output cap (`SandboxSession.cap_mimebundle`), metadata trimmed to
    the representations kept, and the bytes it was charged."""
    session = getattr(shell, "sandbox_session", None)
    if session is None or not isinstance(data, dict):
        return data, metadata, 0
    before = session.output_used
    capped = session.cap_mimebundle(data)
    if capped is not data and isinstance(metadata, dict):
        metadata = {k: v for k, v in metadata.items() if k in capped or "/" not in k}
    return capped, metadata, max(session.output_used - before, 0)


class RLMDisplayHook(ZMQShellDisplayHook):
    """execute_result bundles (a cell's last expression) count against the per-cell output cap; a value a
    helper has shown already (SHOW_VARS' listing, FINAL_VAR's answer: sandbox/shown.py) is not shown again."""

    def __call__(self, result: Any = None) -> None:
        from rlm_kernel.sandbox import shown

        if shown.consume(result):
            return
        super().__call__(result)

    def write_format_data(self, format_dict: Any, md_dict: Any = None) -> None:
        format_dict, md_dict, _ = _capped(self.shell, format_dict, md_dict)
        md_dict = _provenance(self.shell, md_dict, (self.parent_header or {}).get("msg_id"))
        super().write_format_data(format_dict, md_dict)


class RLMDisplayPublisher(ZMQDisplayPublisher):
    """display_data / update_display_data bundles (`display()`) count against the per-cell output cap.

    An update replaces what its display showed, so a display with a `display_id` is charged for its latest
    bundle only (live views that redraw a growing bundle each step do not use up the cap). What such
    displays and their updates *send* is capped too: at most UPDATE_TRAFFIC_FACTOR times the output cap per
    cell; later ones are dropped (and counted in the cell's "output truncated" note).
    """

    UPDATE_TRAFFIC_FACTOR = 20

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._charged: dict[str, tuple[Any, int]] = {}  # display_id -> (cell it was charged in, bytes)
        self._traffic: tuple[Any, int] = (None, 0)  # (cell, bytes sent by displays with an id)

    def publish(self, data: Any, metadata: Any = None, **kwargs: Any) -> None:  # type: ignore[override]
        transient = kwargs.get("transient") or {}
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        session = getattr(self.shell, "sandbox_session", None)
        cell = (self.parent_header or {}).get("msg_id")
        if display_id is not None and session is not None and session.limits.output_bytes:
            cap = session.limits.output_bytes
            size = min(_bundle_size(data), cap)
            sent = self._traffic[1] if self._traffic[0] == cell else 0
            if sent + size > cap * self.UPDATE_TRAFFIC_FACTOR:
                session.output_dropped += size
                return
            self._traffic = (cell, sent + size)
        if display_id is not None and session is not None:
            previous = self._charged.pop(display_id, None)
            if previous is not None and previous[0] == cell:
                session.output_used = max(session.output_used - previous[1], 0)
        data, metadata, charged = _capped(self.shell, data, metadata)
        metadata = _provenance(self.shell, metadata, cell)
        if display_id is not None:
            if len(self._charged) > 10_000:
                self._charged.clear()
            self._charged[display_id] = (cell, charged)
        super().publish(data, metadata, **kwargs)


def _provenance(shell: Any, metadata: Any, cell: str | None) -> Any:
    """`metadata` with the cell's model calls under `rlm` (rlm/provenance.py), when it made any."""
    count = getattr(shell, "execution_count", None)  # IPython counts the running cell before it runs
    return provenance.stamp(metadata, cell, count - 1 if isinstance(count, int) else None)


def _bundle_size(data: Any) -> int:
    """Bytes of a display bundle's largest representation (what the cap counts)."""
    if not isinstance(data, dict):
        return len(repr(data))
    sizes = [len(v) if isinstance(v, (str, bytes)) else len(repr(v)) for v in data.values()]
    return max(sizes, default=0)


class RLMShell(ZMQInteractiveShell):
    """ZMQInteractiveShell whose every cell passes the RestrictedPython policy before it runs."""

    displayhook_class = Type(RLMDisplayHook)
    display_pub_class = Type(RLMDisplayPublisher)
    sandbox_session = AnyTrait(help="the SandboxSession of this kernel").tag(config=False)
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
        result = await super().run_cell_async(raw_cell, *args, **kwargs)
        # ipykernel builds the execute_reply from str(error): hand it the text already shown (capped, and
        # computed under the cell's limits), never the cell's own exception object.
        shown = self._rlm_last_error
        for attr in ("error_before_exec", "error_in_exec"):
            error = getattr(result, attr, None)
            if error is not None:
                name, text = shown if shown else (type(error).__name__, "")
                setattr(result, attr, _stand_in(name, text))
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
                    data, metadata, _ = _capped(self, data, metadata)
                    out[key] = {"status": "ok", "data": data, "metadata": metadata}
                except BaseException as exc:  # noqa: BLE001 - reported to the client like IPython does
                    name, text = type(exc).__name__, _error_text(exc, _error_budget(session))
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
        if issubclass(etype, SyntaxError) or etype is UsageError:
            return super().showtraceback(
                exc_tuple, filename, tb_offset, exception_only, running_compiled_code
            )
        self._prune_chain(value)
        _cut_chain(value, _error_budget(self.sandbox_session))
        add_name_suggestion(value)  # "Did you mean: 'x'?" from the cell's own names, as plain Python shows
        tb = value.__traceback__
        if isinstance(value, SandboxError) or tb is None or exception_only:
            stb = self.InteractiveTB.get_exception_only(etype, value)
            self._showtraceback(etype, value, stb)
            return
        super().showtraceback((etype, value, tb), filename, 0, False, running_compiled_code)

    def _showtraceback(self, etype: Any, evalue: Any, stb: Any) -> None:
        """Send the error under the output cap: the rendered traceback and the message are cut to what is
        left of the cell's output allowance (at least a few kilobytes, so an error is always seen)."""
        budget = _error_budget(self.sandbox_session)
        text = _error_text(evalue, budget)
        stb = _cut_lines([str(line) for line in stb or []], budget)
        self._rlm_last_error = (getattr(etype, "__name__", "Error"), text)
        super()._showtraceback(etype, _Shown(text), stb)

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


# Errors: how many chained exceptions a traceback shows, and the longest message rendered as is.
MAX_CHAIN = 30
MAX_MESSAGE = 20_000
_MIN_ERROR_BYTES = 8_192  # an error is shown even when the cell's output allowance is used up


class _Shown:
    """What ipykernel's error message gets as the exception value: the (capped) text, nothing else."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _stand_in(name: str, text: str) -> BaseException:
    """An exception named like the cell's, carrying only the text shown (for the execute_reply)."""
    kind = type(name, (Exception,), {"__str__": lambda self: text, "__module__": "builtins"})
    return kind()


def _error_budget(session: Any) -> int:
    """Bytes an error may still send in this cell (0: no cap)."""
    cap = session.limits.output_bytes if session is not None else 0
    if not cap:
        return 0
    return max(cap - session.output_used, min(cap, _MIN_ERROR_BYTES))


def _error_text(exc: Any, budget: int) -> str:
    """str(exc), cut to `budget` bytes (and MAX_MESSAGE characters) with a note; never raises."""
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - an unprintable message (or the time limit inside its __str__)
        text = f"<unprintable {type(exc).__name__} message>"
    limit = min(budget, MAX_MESSAGE) if budget else MAX_MESSAGE * 50
    if len(text) > limit:
        text = text[:limit] + f"… [message truncated: {len(text)} characters]"
    return text


def _cut_lines(lines: list[str], budget: int) -> list[str]:
    """Keep lines until `budget` bytes are used; the rest is replaced by one note."""
    if not budget:
        return lines
    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        size = len(line.encode("utf-8", "surrogatepass"))
        if used + size > budget:
            room = max(budget - used, 0)
            if room:
                kept.append(line.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore"))
            dropped = sum(len(x) for x in lines[index:]) - room
            kept.append(
                f"[error output truncated: about {dropped} more characters over the output limit "
                "per cell (RLM_OUTPUT_BYTES)]"
            )
            return kept
        kept.append(line)
        used += size
    return kept


def _cut_chain(value: BaseException, budget: int) -> None:
    """Before rendering: keep the first MAX_CHAIN exceptions of a `raise … from` / context chain (the rest
    is dropped with a note), and cut over-long messages of built-in exception types (their str is args)."""
    seen: set[int] = set()
    exc: BaseException | None = value
    depth = 0
    limit = min(budget, MAX_MESSAGE) if budget else MAX_MESSAGE
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        depth += 1
        if type(exc).__module__ == "builtins" and len(exc.args) == 1 and isinstance(exc.args[0], str):
            message = exc.args[0]
            if len(message) > limit:
                exc.args = (message[:limit] + f"… [message truncated: {len(message)} characters]",)
        following = (
            exc.__cause__
            if exc.__cause__ is not None
            else (None if exc.__suppress_context__ else exc.__context__)
        )
        if depth >= MAX_CHAIN and following is not None:
            rest = 0
            probe: BaseException | None = following
            while probe is not None and rest < 1_000_000 and id(probe) not in seen:
                seen.add(id(probe))
                rest += 1
                probe = probe.__cause__ if probe.__cause__ is not None else probe.__context__
            exc.__cause__ = None
            exc.__context__ = None
            exc.__suppress_context__ = True
            try:
                exc.add_note(f"[{rest} earlier chained exception(s) not shown]")
            except Exception:  # noqa: BLE001 - a note is a courtesy
                pass
            return
        exc = following
