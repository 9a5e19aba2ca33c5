"""Whose code is running: a person's cell, or model-written code (a root loop or sub-RLM turn).

Model-written code may not change the kernel: magics, `%rlm set`, `allow_secrets=True`, `rlm_run` and other
settings refuse while model code could be acting. Trust follows who wrote the code, checked three ways:

- the block counter: the root loop wraps every block of model code in `model_code()`. It is process-wide
  on purpose: while model code runs anywhere (a sub-RLM on a worker thread, another session's root loop),
  the kernel-changing commands refuse everywhere, failing closed;
- the origin of the code on the stack: `run_source(..., model=True)` registers the filename each model
  block is compiled under (`register_model_filename`), so every function, lambda, method, generator and
  class body model code defines carries that mark in its code objects — wherever it runs later (a
  person's cell calling a function a `--shared` block redefined, a builtin it shadowed, a `_repr_html_`
  or `__eq__` of an object it left, a generator it made). `refuse_in_model_code` walks the stack and
  refuses if any frame
  runs such code. Cells cannot forge the mark: their filenames come from IPython's compiler, they cannot
  compile code or build code objects, and the registry is not reachable from a cell;
- the call site (`require_person_call`): a privileged helper call must be written in a person's cell,
  as a direct call of the helper by name (with the privileged keyword written in it). C-level callables
  leave no frame on the stack — a `functools.partial(load_context, allow_secrets=True)` model code left
  under a name the person calls, an `operator.methodcaller`, a `property`/`__eq__` slot holding such a
  partial, `map`/`sorted(key=)`/`itertools` driving it — so the check reads the calling cell's own source
  at the instruction that is running: a call of something else there, or a library frame in between,
  is refused.

The stack walk and the call-site check run only when a privileged operation is asked for (rare); nothing is
added to the hot paths of sandboxed code.
"""

from __future__ import annotations

import ast
import linecache
import sys
import threading
import types
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from rlm_kernel.sandbox.errors import SandboxError
from rlm_kernel.sandbox.filenames import is_sandboxed_filename

__all__ = [
    "ModelCodeRefused",
    "called_directly_by_person",
    "is_model_filename",
    "made_by_model",
    "model_code",
    "model_code_running",
    "model_frame_on_stack",
    "new_cell",
    "note_cell_code",
    "refuse_in_model_code",
    "register_model_filename",
    "register_apply",
    "register_display_function",
    "register_display_path",
    "register_forwarder",
    "register_pass_through",
    "register_trampoline",
    "require_direct_chain",
    "require_person_call",
    "require_person_method_call",
    "written_by_person",
]

_lock = threading.Lock()
_running = 0  # blocks of model code running now, in any thread (sub-RLMs may run on worker threads)
_MODEL_FILES: set[str] = set()  # filenames model blocks were compiled under (never removed)
_TRAMPOLINES: set[types.CodeType] = set()  # kernel wrappers between a helper and its caller (repl.helpers)
_PASS_THROUGH: set[types.CodeType] = set()  # kernel code that only forwards a cell's own call (`_apply_`)
_FORWARDERS: set[types.CodeType] = set()  # kernel code that calls what a cell's object names (methodcaller)
_APPLY: set[types.CodeType] = set()  # the `_apply_` guard a call with `*args`/`**kwargs` is rewritten to
_DISPLAY_FUNCTIONS: set[types.CodeType] = (
    set()
)  # IPython's display(): where a cell's bundle enters the kernel
_DISPLAY_PATH: set[types.CodeType] = set()  # kernel code that only forwards to display() (h.update, plt.show)
_CELL_CODES: list[types.CodeType] = []  # the code objects compiled for the cell running now (RLMCompiler)
_MAX_CELL_CODES = 10_000
_cells_compiled = False  # this process has compiled a cell: it is a kernel (not the library used from Python)


class ModelCodeRefused(SandboxError):
    """Model-written code tried something only a person's cell may do (shown as `SandboxError`)."""


ModelCodeRefused.__name__ = ModelCodeRefused.__qualname__ = "SandboxError"


@contextmanager
def model_code() -> Iterator[None]:
    """Mark the code run inside this block as model-written (nests; counts across threads)."""
    global _running
    with _lock:
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1


def model_code_running() -> bool:
    """True while any block of model-written code runs."""
    return _running > 0


def register_model_filename(filename: str) -> None:
    """Record that code compiled under `filename` is model-written (a root-loop or sub-RLM block).

    Refuses a filename already registered as a person's cell: a cell's code never becomes model code, and
    model code never passes as a cell.
    """
    if type(filename) is not str or (is_sandboxed_filename(filename) and filename not in _MODEL_FILES):
        raise SandboxError("internal: a model block's filename must be new (report this as a bug)")
    _MODEL_FILES.add(filename)


def is_model_filename(filename: object) -> bool:
    """True if `filename` names code compiled from a model-written block."""
    return type(filename) is str and filename in _MODEL_FILES


def made_by_model(obj: object) -> bool:
    """True if `obj`'s class (or a base) has a method model-written code defined — its `_repr_*_`, `__repr__`
    or any other: what it displays was chosen by model code. Looked up without running any of its code, and
    remembered per class (the methods a display calls are `_`-names, which cells cannot set on a class after
    its body ran)."""
    cls = type(obj)
    known = _MODEL_MADE.get(cls)
    if known is None:
        known = _MODEL_MADE[cls] = _class_made_by_model(cls)
    return known


_MODEL_MADE: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _class_made_by_model(cls: type) -> bool:
    try:
        mro = type.__dict__["__mro__"].__get__(cls)
    except (AttributeError, TypeError, KeyError):
        return False
    for klass in mro:
        for member in type.__dict__["__dict__"].__get__(klass).values():
            if type(member) is staticmethod or type(member) is classmethod or type(member) is property:
                member = getattr(member, "__func__", None) or getattr(member, "fget", None)
            if type(member) is types.FunctionType and member.__code__.co_filename in _MODEL_FILES:
                return True
    return False


def register_trampoline(code: types.CodeType) -> None:
    """Record a kernel wrapper's code object that sits between a helper and its caller (skipped when
    `require_person_call` looks for the call site)."""
    _TRAMPOLINES.add(code)


def new_cell() -> None:
    """A person's cell starts: forget the code compiled for the previous one."""
    _CELL_CODES.clear()


def note_cell_code(code: types.CodeType) -> None:
    """Record a code object the shell compiled for the cell running now (one per top-level statement)."""
    global _cells_compiled
    _cells_compiled = True
    if len(_CELL_CODES) < _MAX_CELL_CODES:
        _CELL_CODES.append(code)


def _in_running_cell(code: types.CodeType) -> bool:
    """True if `code` was compiled as part of the cell running now (this execution of it, not an earlier
    run of the same source, which has the same filename): a def, class body, comprehension or generator
    written in it."""
    stack = list(_CELL_CODES)
    seen = 0
    while stack and seen < 100_000:
        outer = stack.pop()
        seen += 1
        if outer is code:
            return True
        stack.extend(c for c in outer.co_consts if type(c) is types.CodeType)
    return False


def register_pass_through(code: types.CodeType) -> None:
    """Record kernel code that only forwards a call the cell itself wrote (the `_apply_` guard of `f(*a)`,
    the sandbox's `__build_class__` running a class body): skipped when `require_direct_chain` looks for
    who called a person's function."""
    _PASS_THROUGH.add(code)


def register_apply(code: types.CodeType) -> None:
    """Record the `_apply_` guard: RestrictedPython rewrites every call that unpacks `*args` or `**kwargs` to
    `_apply_(f, ...)`, so the frame such a call of a cell enters is that guard's (`_unpacking`)."""
    _APPLY.add(code)
    _PASS_THROUGH.add(code)


def _entered(outer: types.FrameType, inner: types.FrameType) -> types.FrameType:
    """The frame `outer` called, on the way out from `inner` (a frame `outer` is on the stack of)."""
    while inner.f_back is not None and inner.f_back is not outer:
        inner = inner.f_back
    return inner


def _unpacking(node: ast.Call, entered: types.FrameType) -> bool:
    """True if the call `node` unpacks `*args` or `**kwargs` but the frame its instruction entered is not the
    `_apply_` guard the call is rewritten to: code that ran while the cell unpacked the arguments — a
    model-made mapping's `keys` that is a `functools.partial` (no frame of its own), an `itertools.starmap`
    calling one — not the call itself, though the instruction's source position is the whole call (red team
    7)."""
    unpacks = any(isinstance(arg, ast.Starred) for arg in node.args) or any(
        keyword.arg is None for keyword in node.keywords
    )
    return unpacks and entered.f_code not in _APPLY


def register_forwarder(code: types.CodeType) -> None:
    """Record kernel code that calls something a cell's object chose (the sandbox's `operator.methodcaller`
    calls the method it was made with, with the arguments it was made with): a cell calling it by name has
    not called what it ends up running, so `called_directly_by_person` says no."""
    _FORWARDERS.add(code)


def register_display_function(code: types.CodeType) -> None:
    """Record IPython's `display()`: where a cell's bundle enters the kernel (`called_directly_by_person`)."""
    _DISPLAY_FUNCTIONS.add(code)


def register_display_path(*codes: types.CodeType) -> None:
    """Record kernel code that only forwards a cell's call to `display()` (a display handle's `update` and
    `display`, `update_display`, the sandbox's `plt.show`): `called_directly_by_person` accepts nothing else
    between the person's call and the `display()` that publishes."""
    _DISPLAY_PATH.update(codes)


def model_frame_on_stack(frame: types.FrameType | None = None) -> types.FrameType | None:
    """The innermost frame running model-written code on the current stack (from `frame`), or None."""
    frame = frame if frame is not None else sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename in _MODEL_FILES:
            return frame
        frame = frame.f_back
    return None


def _describe(frame: types.FrameType) -> str:
    name = frame.f_code.co_name
    where = "" if name == "<module>" else f" (in {name}, line {frame.f_lineno})"
    return where or f" (line {frame.f_lineno})"


def refuse_in_model_code(what: str) -> None:
    """Raise `ModelCodeRefused` naming `what` if model-written code is running or is on the stack."""
    if _running > 0:
        raise ModelCodeRefused(
            f"{what} is not available to model-written code (root loop or sub-RLM): only the person's own "
            "cells may change the kernel"
        )
    found = model_frame_on_stack(sys._getframe(1))
    if found is not None:
        raise ModelCodeRefused(
            f"{what} is not available here: model-written code is on the stack{_describe(found)} — a "
            "function, method, class or object a root-loop or sub-RLM block defined keeps the model's "
            "trust, not yours, wherever it runs. Only code written in your own cells may do this"
        )


def _call_at(frame: types.FrameType) -> ast.expr | None:
    """The source expression of the instruction `frame` is running, parsed (None when unknown)."""
    code = frame.f_code
    try:
        positions = list(code.co_positions())[frame.f_lasti // 2]
    except (IndexError, ValueError):
        return None
    lineno, end_lineno, col, end_col = positions
    entry = linecache.cache.get(code.co_filename)  # never reads a file: cells are cached by their compiler
    if lineno is None or end_lineno is None or col is None or end_col is None or not entry:
        return None
    lines = entry[2]
    if not 1 <= lineno <= end_lineno <= len(lines):
        return None
    chunk = [line.encode("utf-8") for line in lines[lineno - 1 : end_lineno]]
    if len(chunk) == 1:
        chunk[0] = chunk[0][col:end_col]
    else:
        chunk[0], chunk[-1] = chunk[0][col:], chunk[-1][:end_col]
    try:
        tree = ast.parse(b"(\n" + b"".join(chunk) + b"\n)", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return tree.body


def _lookup(frame: types.FrameType, name: str) -> object:
    missing = object()
    for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
        value = scope.get(name, missing)
        if value is not missing:
            return value
    return missing


def written_by_person(name: str, helper: object) -> bool:
    """True if the helper running now (any depth below its kernel trampoline) was called by a person's own
    cell code, as `require_person_call` checks it: for displays the kernel shows as its own on the caller's
    behalf (the FINAL box), which model-written code must not get."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code not in _TRAMPOLINES:
        frame = frame.f_back
    if frame is None:
        return False
    try:
        require_person_call("this", name, helper, start=frame)
    except ModelCodeRefused:
        return False
    return True


def require_person_call(
    what: str, name: str, helper: object, keyword: str | None = None, *, start: types.FrameType | None = None
) -> None:
    """Refuse unless the helper running now was called directly by a person's cell.

    Call it from the helper's implementation (the function the helper closure calls). The call site — the
    first frame above it that is not a registered kernel trampoline — must run code of a person's cell
    (not model-written code, not a library or the kernel), and the instruction it runs must be a call,
    written in that cell, of `name` — the helper's own name, so that an alias model code bound under a
    name the person calls for something else does not pass — bound to `helper` there, with `keyword=`
    written in it. A C-level wrapper (`functools.partial`, `operator.methodcaller`, a slot or `key=` that
    calls it) leaves the cell's frame running some other instruction, and is refused.
    """
    refuse_in_model_code(what)
    frame = start if start is not None else sys._getframe(2)
    while frame is not None and frame.f_code in _TRAMPOLINES:
        frame = frame.f_back
    written = f"{what} must be written in your own cell as a direct call"
    if frame is None or not is_sandboxed_filename(frame.f_code.co_filename):
        raise ModelCodeRefused(
            f"{written}: here it was called by library or kernel code (a callback, a display hook, a "
            "wrapper such as functools.singledispatch or a dataclass field). Call it yourself in a cell"
        )
    node = _call_at(frame)
    if node is None:
        raise ModelCodeRefused(
            f"{written}: the kernel cannot read the source of this call (code a magic such as %time or "
            "%timeit compiled, which keeps no source), so it cannot tell it from a wrapper. Write it as a "
            "plain statement in a cell"
        )
    direct = (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == name
        and helper is not None
        and _lookup(frame, name) is helper
        and (keyword is None or any(k.arg == keyword for k in node.keywords))
    )
    if not direct:
        spelled = f"{keyword}=" if keyword else "its arguments"
        raise ModelCodeRefused(
            f"{written}, with {spelled} written in the call: here it was reached through another object "
            "(a functools.partial, operator.methodcaller, property, comparison, map/sorted key or a name "
            f"that model-written code may have rebound). Write the call itself in your cell, by its name, "
            f"e.g. `{name}(path, {keyword}=True)` (a def or lambda of your own may wrap it)"
            if keyword
            else f"{written}: here it was reached through another object (a functools.partial, map, "
            "property, comparison or a name that model-written code may have rebound). Write the call "
            f"itself in your cell, by its name `{name}(...)` (a def or lambda of your own may wrap it)"
        )
    require_direct_chain(what, frame)


def _static(obj: object, attribute: str) -> object:
    """`obj.attribute` without running any descriptor (a property model code wrote never runs here)."""
    import inspect

    from rlm_kernel.sandbox.facade import Facade  # a module facade hands out its chosen names by __getattr__

    if type(obj) is Facade:
        value = object.__getattribute__(obj, "_rlm_attrs").get(attribute)
        return value.__func__ if type(value) is staticmethod or type(value) is classmethod else value
    try:
        value = inspect.getattr_static(obj, attribute)
    except AttributeError:
        return None
    if type(value) is staticmethod or type(value) is classmethod:
        return value.__func__
    return value


def _callee(frame: types.FrameType, node: ast.expr) -> object:
    """What the call expression `node`'s function (a name or a dotted name) is bound to in `frame`, looked up
    without running code (no properties, no `__getattr__`); None when it is anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    value = _lookup(frame, node.id)
    for attribute in reversed(parts):
        value = _static(value, attribute)
    return value


def _runs(obj: object, code: types.CodeType) -> bool:
    """True if calling `obj` runs `code` directly: a function or method whose code it is, a class whose
    `__init__`/`__new__` it is (`Cls()`), or an instance whose class's `__call__` it is (`obj()`)."""
    func = obj.__func__ if type(obj) is types.MethodType else obj
    if type(func) is types.FunctionType:
        return func.__code__ is code  # a plain function's own code (a C attribute: runs nothing)
    if issubclass(type(obj), type):  # never obj.__class__ (a property could run)
        cls, names = obj, ("__init__", "__new__")
    else:
        cls, names = type(obj), ("__call__",)
    for klass in getattr(cls, "__mro__", ()):
        for name in names:
            member = vars(klass).get(name)
            if type(member) is staticmethod or type(member) is classmethod:
                member = member.__func__
            if type(member) is types.FunctionType and member.__code__ is code:
                return True
    return False


def require_direct_chain(what: str, frame: types.FrameType) -> None:
    """Refuse unless each function between the cell and the privileged call was called by the person by name.

    `frame` runs the person's direct call of the helper. A person's own function that makes such a call
    (`def read(p): return load_context(p, allow_secrets=True)`) must itself be called by name from the
    person's code — not through a `functools.partial`, `map`, `sorted(key=)` or any other wrapper, which
    model code could have made around it and left under a name the person calls (the C-level wrapper
    leaves no frame, so the caller's frame is running some other instruction), and not by library or kernel
    code. Code of the caller's own cell (a comprehension, class body, def or generator written in it) counts
    as the caller's. Checked up to the cell's top level (or a user expression)."""
    inner = frame
    while True:
        outer = inner.f_back
        while outer is not None and (outer.f_code in _PASS_THROUGH or outer.f_code in _TRAMPOLINES):
            outer = outer.f_back
        if outer is None or not is_sandboxed_filename(outer.f_code.co_filename):
            if inner.f_code.co_name == "<module>":
                return  # the cell's (or user expression's) own top level, run by the kernel
            raise ModelCodeRefused(
                f"{what} is not available here: your function {inner.f_code.co_name}() that does it was "
                "called by library or kernel code (a callback, a display hook, a wrapper), not by your cell. "
                "Call it yourself, by its name, in a cell"
            )
        # code of the cell running now (a comprehension, class body, def or generator written with the call,
        # compiled in this execution) is the person's own from end to end; any other function — of another
        # cell, or of an earlier run of this one — must be called by its name
        if inner.f_code.co_filename != outer.f_code.co_filename or not _in_running_cell(inner.f_code):
            node = _call_at(outer)
            if not (
                isinstance(node, ast.Call)
                and _runs(_callee(outer, node.func), inner.f_code)
                and not _unpacking(node, _entered(outer, inner))
            ):
                raise ModelCodeRefused(
                    f"{what} is not available here: your function {inner.f_code.co_name}() that does it was "
                    "reached through another object (a functools.partial, map, sorted key, property, "
                    "comparison or a name that model-written code may have rebound), not called by its name "
                    "in your code. Call it by its name, e.g. "
                    f"`{inner.f_code.co_name}(...)`, in your own cell"
                )
        inner = outer


def called_directly_by_person() -> bool:
    """True unless kernel or library code running now was reached from cell code through a wrapper.

    For outputs: a `display()` the person's cell wrote (`display(x)`, `handle.update(x)`, `plt.show()`, a
    function of theirs called by name that does one) is the person's; the same display reached through a
    `functools.partial(display, <model's bundle>)`, a `map(display, ...)`, a partial of a handle's
    `update` or an `operator.methodcaller('update', <model's bundle>, raw=True)` (a kernel forwarder the
    person's cell calls by name) that model code left under a name the person calls is model-written code's
    output. Looks at
    the innermost cell frame on the stack: the instruction it runs must be a call of the function running
    just inside it (kernel pass-through frames aside), and its own callers must pass
    `require_direct_chain`. With no cell frame on the stack (the kernel's own work after a cell) it is
    True; with a model-written frame it is False."""
    inside: types.FrameType | None = None
    kernel_frames: list[types.FrameType] = []
    frame = sys._getframe(1)
    while frame is not None and not is_sandboxed_filename(frame.f_code.co_filename):
        if frame.f_code.co_filename in _MODEL_FILES:
            return False
        if frame.f_code not in _PASS_THROUGH:
            inside = frame
            kernel_frames.append(frame)
        frame = frame.f_back
    if frame is None or inside is None:
        return True
    if inside.f_code in _FORWARDERS or model_frame_on_stack(frame) is not None:
        return False
    # the innermost display() must have been reached from the cell through display machinery only: one that
    # kernel or library code ran while doing the person's call (a model-made partial of `display` as a
    # citation's `keys` in the person's `to_jsonl`, in pandas' `float_format` or an object's `_repr_html_`
    # slot during the person's `display(df)`) is not the person's display (issue 26 class 2, session 6)
    for i, kernel_frame in enumerate(kernel_frames):
        if kernel_frame.f_code in _DISPLAY_FUNCTIONS:
            if any(outer.f_code not in _DISPLAY_PATH for outer in kernel_frames[i + 1 :]):
                return False
            break
    node = _call_at(frame)
    if not (
        isinstance(node, ast.Call)
        and _runs(_callee(frame, node.func), inside.f_code)
        and not _unpacking(node, _entered(frame, inside))
    ):
        return False
    try:
        require_direct_chain("this", frame)
    except ModelCodeRefused:
        return False
    return True


def require_person_method_call(what: str, method: types.CodeType) -> None:
    """Refuse unless the kernel method running now (`rlm_result.save(...)`) was called by a person's own code
    itself: no model-written frame on the stack, and the frame that called the method's innermost run (kernel
    pass-through frames aside) is a person's cell or function whose running instruction is a call of that very
    method (looked up without running code), with a chain of callers that `require_direct_chain` accepts.

    A method a person may call that acts on the person's files must not run for model-written code: a
    function a `--shared` run left (`def tidy(): rlm_result.save('analysis.ipynb', overwrite=True)`), a
    `__repr__` the display runs, a `functools.partial` of the bound method under a name the person calls —
    nor one that kernel or library code runs while doing the person's own call: a partial of `to_jsonl` as a
    citation's `keys`, run by `dict(c)` inside the person's `mine.to_jsonl(...)`, has the person's cell on the
    stack calling `to_jsonl`, but its caller is the kernel (issue 26 class 2, session 6). In a kernel, no cell
    frame on the stack refuses too; outside a kernel (the package used from plain Python, where no cell was
    ever compiled) there is no cell to check. `method` is the code of the method itself."""
    refuse_in_model_code(what)
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not method:
        frame = frame.f_back
    if frame is None:  # the method's own frame is not on the stack: called wrongly (a bug), refuse
        raise ModelCodeRefused(f"{what}: internal check called outside the method (report this as a bug)")
    caller = frame.f_back
    while caller is not None and caller.f_code in _PASS_THROUGH:
        caller = caller.f_back
    in_cell = caller is not None and is_sandboxed_filename(caller.f_code.co_filename)
    if not in_cell and not _cells_compiled:
        return  # the package used from plain Python
    node = _call_at(caller) if caller is not None and in_cell else None
    if caller is None or not (
        isinstance(node, ast.Call)
        and _runs(_callee(caller, node.func), method)
        and not _unpacking(node, _entered(caller, frame))
    ):
        raise ModelCodeRefused(
            f"{what} must be written in your own cell as a direct call of the method: here it was reached "
            "through another object (a functools.partial, map, property, comparison, a display or library "
            "callback, or a name that model-written code may have rebound). Write the call itself in your "
            "cell, e.g. `rlm_result.save('run.ipynb')`"
        )
    require_direct_chain(what, caller)
