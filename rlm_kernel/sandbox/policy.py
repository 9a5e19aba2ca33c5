"""Compile-time policy: a RestrictedPython transformer with the rlm kernel's extra rules, and `restrict_ast`.

Fails closed: any internal error while checking a cell rejects the cell with a `SandboxError`.
"""

from __future__ import annotations

import ast
import copy
import linecache
import re
from collections.abc import Iterable
from typing import Any

from RestrictedPython.transformer import INSPECT_ATTRIBUTES, RestrictingNodeTransformer, copy_locations

from rlm_kernel.sandbox.caps import PERCENT_SPEC
from rlm_kernel.sandbox.errors import SandboxError, format_refusal
from rlm_kernel.sandbox.limits import Limits

__all__ = [
    "ALLOWED_DUNDER_METHODS",
    "READABLE_DUNDERS",
    "EXCEPTION_DUNDERS",
    "ALWAYS_REFUSED",
    "RANGE_BITS",
    "REFUSED_NAMES",
    "RLMTransformer",
    "is_sandboxed_filename",
    "register_sandboxed_filename",
    "restrict_ast",
]

# Data-model methods a class defined in a cell may implement (plus IPython's rich display hooks).
ALLOWED_DUNDER_METHODS = frozenset(
    f"__{n}__"
    for n in (
        "init post_init repr str format len iter next reversed contains getitem setitem delitem missing "
        "eq ne lt le gt ge hash bool call enter exit index int float complex round abs neg pos invert "
        "add sub mul truediv floordiv mod divmod pow matmul and or xor lshift rshift "
        "radd rsub rmul rtruediv rfloordiv rmod rdivmod rpow rmatmul rand ror rxor rlshift rrshift "
        "iadd isub imul itruediv ifloordiv imod ipow imatmul iand ior ixor ilshift irshift "
        "fspath"  # os.PathLike objects for load_context (their method runs inside the cell)
    ).split()
) | frozenset(f"_repr_{n}_" for n in "html markdown latex json svg png jpeg pdf mimebundle".split())

# Private hooks an Enum subclass defined in a cell may implement (the enum machinery calls them).
ENUM_HOOKS = frozenset({"_missing_", "_generate_next_value_"})

# Dunder names a cell may assign: `__slots__` in a class body, `__all__` at module level (read back too).
CLASS_BODY_DUNDERS = frozenset({"__slots__"})
MODULE_DUNDERS = frozenset({"__all__"})

# Dunder attributes that may be *read* anywhere: they hold names and docs (checked to be str at run time).
READABLE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__"})

# Dunder attributes of exceptions that may be read (checked at run time: an exception's list of str notes).
EXCEPTION_DUNDERS = frozenset({"__notes__"})

# Builtins a cell may not use, with the reason given.
REFUSED_NAMES = {
    "get_ipython": "get_ipython() is not available in the rlm kernel: it hands over the whole shell",
    "exit": "exit() is not available in the rlm kernel; restart the kernel from the Kernel menu",
    "quit": "quit() is not available in the rlm kernel; restart the kernel from the Kernel menu",
    "open": "open() is not available: the sandbox has no file access; use load_context() to read files",
    "eval": "eval() is not available: all code must pass the sandbox policy",
    "exec": "exec() is not available: all code must pass the sandbox policy",
    "compile": "compile() is not available: all code must pass the sandbox policy",
    "input": "input() is not available in the rlm kernel",
    "breakpoint": "the debugger is not available in the rlm kernel",
    "globals": "globals() is not available: it would expose the sandbox guards",
    "locals": "locals() is not available: it would expose the sandbox guards",
    "vars": "vars() is only available for objects of classes defined in cells",
    "help": "help() is not available in the rlm kernel; use obj? in a cell instead",
    "memoryview": "memoryview() is not available in the rlm kernel",
}

# Private names (`_cache`, `_helper`): allowed as attributes (checked at run time: only on objects of classes
# defined in cells) and as method/attribute names directly in a class body. Never the guards' names, which
# end with '_', nor RestrictedPython's `_print` or the transformer's `_tmpN` temporaries.
PRIVATE_NAME = re.compile(r"_(?!_)(?!print\Z)(?!tmp\d+\Z)\w*[A-Za-z0-9]\Z")

# Refused wherever they are read (IPython puts the first four in its namespaces; eval/exec run unchecked
# code). The other refused builtins are stubs that raise their reason when called, so a cell may still use
# e.g. `input` or `vars` as its own variable names.
ALWAYS_REFUSED = frozenset({"get_ipython", "exit", "quit", "open", "eval", "exec"})

# IPython history names that may be read: _ __ ___ _N _i _ii _iii _iN
_HISTORY_NAME = re.compile(r"_(?:\d+|_{1,2}|i{1,3}|i\d+)\Z")

_SANDBOXED_FILES: set[str] = set()


def register_sandboxed_filename(filename: str) -> None:
    """Record that code compiled under `filename` is restricted user code (for tracebacks and timers)."""
    _SANDBOXED_FILES.add(filename)


def is_sandboxed_filename(filename: str) -> bool:
    """True if `filename` names restricted user code."""
    return filename in _SANDBOXED_FILES


class _Refusal(Exception):
    """Internal: the first policy violation found, with its node."""


class RLMTransformer(RestrictingNodeTransformer):
    """RestrictedPython's transformer with the rlm kernel's rules (see the README's Sandbox section)."""

    def __init__(
        self,
        *,
        trusted_names: Iterable[str] = (),
        max_int_bits: int = 10_000_000,
        max_format_width: int = 100_000,
        fast_paths: bool = True,
    ) -> None:
        super().__init__()
        self.trusted_names = frozenset(trusted_names)
        self.first_error: tuple[ast.AST | None, str] | None = None
        self.scopes: list[str] = ["module"]
        self.class_names: list[str] = []  # enclosing class statements, innermost last (for name mangling)
        self.reported: set[tuple[int | None, int | None]] = set()
        # Bits of the largest integer ** / << / * may build (Limits.max_int_bits; 0 = uncapped); used to
        # prove that a numeric fast path cannot exceed the cap the guards enforce.
        self.max_int_bits = max_int_bits
        self.max_format_width = max_format_width  # Limits.max_format_width: literal '%' formats within it
        self.fast_paths = fast_paths
        self._guarded_only = 0  # > 0 while building the guarded branch of a fast path
        # id(node) → (loop variable, flag name): the first statement of a `for` loop whose variable is an
        # exact int below 2**RANGE_BITS when the flag is true (see visit_For)
        self._loop_proofs: dict[int, tuple[str, str]] = {}

    # -- reporting ------------------------------------------------------------------------------------------
    def error(self, node: ast.AST, info: str) -> None:
        key = (getattr(node, "lineno", None), getattr(node, "col_offset", None))
        if key in self.reported:
            return  # one problem per place: RestrictedPython and these rules may both object
        self.reported.add(key)
        super().error(node, info)
        if self.first_error is None:
            self.first_error = (node, info)

    def refuse(self, node: ast.AST, reason: str) -> None:
        self.error(node, reason)

    # -- names ----------------------------------------------------------------------------------------------
    def check_name(self, node: ast.AST, name: str | None, allow_magic_methods: bool = False) -> None:
        if name is None:
            return
        if name in self.trusted_names:
            return
        in_class_body = self.scopes[-1] == "class"
        if allow_magic_methods and name in ALLOWED_DUNDER_METHODS and in_class_body:
            return
        if allow_magic_methods and name in ENUM_HOOKS and in_class_body:
            return
        storing = isinstance(getattr(node, "ctx", None), ast.Store)
        if name in CLASS_BODY_DUNDERS and in_class_body and storing:
            return
        if (
            name in MODULE_DUNDERS
            and self.scopes[-1] == "module"
            and isinstance(getattr(node, "ctx", None), (ast.Store, ast.Load))
        ):
            return
        if (
            in_class_body
            and PRIVATE_NAME.match(name)
            and not isinstance(getattr(node, "ctx", None), ast.Load)
        ):
            return
        if name.startswith("_") and name != "_":
            if allow_magic_methods:
                self.refuse(
                    node,
                    f"defining {name!r} is not allowed; classes may define data-model methods "
                    "such as __init__, __repr__, __len__, __iter__, __eq__, __lt__, _repr_html_",
                )
            else:
                self.refuse(node, f"{name!r} starts with '_': underscore names are reserved for the sandbox")
            return
        super().check_name(node, name, allow_magic_methods)

    def mangle(self, name: str) -> str:
        """Python's private name mangling (`__x` in class C → `_C__x`), done here so the checks see the
        name the attribute really has; such names are private names, readable only on your own objects."""
        if not self.class_names or not name.startswith("__") or name.endswith("__"):
            return name
        stripped = self.class_names[-1].lstrip("_")
        return f"_{stripped}{name}" if stripped else name

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if self.scopes[-1] == "class" and isinstance(node.ctx, ast.Store):
            node.id = self.mangle(node.id)  # `__count = 0` in a class body
        if isinstance(node.ctx, ast.Load):
            if node.id in ALWAYS_REFUSED:
                self.refuse(node, REFUSED_NAMES[node.id])
                return node
            if _HISTORY_NAME.match(node.id) or node.id in self.trusted_names or node.id == "__name__":
                return node  # history values, the kernel's own helpers, and the module name '__main__
        return super().visit_Name(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id in ALWAYS_REFUSED:
            self.refuse(node, REFUSED_NAMES[node.func.id])
        return super().visit_Call(node)

    def visit_Global(self, node: ast.Global) -> ast.AST:
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        for name in node.names:
            self.check_name(node, name)
        return node

    # -- attributes -----------------------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        node.attr = self.mangle(node.attr)
        attr = node.attr
        inner = node.value
        if (
            attr in READABLE_DUNDERS
            and isinstance(node.ctx, ast.Load)
            and isinstance(inner, ast.Attribute)
            and inner.attr == "__class__"
        ):
            # `obj.__class__.__name__` → the name of `type(obj)`: the class itself is never handed out.
            call = _call("_getattr_", _call("_class_of_", self.visit(inner.value)), ast.Constant(attr))
            for sub in (call, call.func, call.args[0], call.args[0].func, call.args[1]):
                copy_locations(sub, node)
            return call
        allowed_dunder = isinstance(node.ctx, ast.Load) and (
            attr in READABLE_DUNDERS
            or attr in EXCEPTION_DUNDERS
            or (attr in ALLOWED_DUNDER_METHODS and _is_super_call(node.value))
            or (attr in ALLOWED_DUNDER_METHODS and attr.startswith("_repr_"))  # run time: own objects only
        )
        if allowed_dunder:
            value = self.visit(node.value)
            call = ast.Call(
                func=ast.Name("_getattr_", ast.Load()), args=[value, ast.Constant(attr)], keywords=[]
            )
            copy_locations(call, node)
            return call
        if PRIVATE_NAME.match(attr):
            # Checked at run time: private attributes only of your own objects.
            node.value = self.visit(node.value)
            if isinstance(node.ctx, ast.Load):
                call = _call("_getattr_", node.value, ast.Constant(attr))
                copy_locations(call, node)
                copy_locations(call.func, node)
                return call
            wrapped = _call("_write_attr_", node.value)
            copy_locations(wrapped, node.value)
            copy_locations(wrapped.func, node.value)
            node.value = wrapped
            return node
        if attr.startswith("_") and attr != "_":
            self.refuse(
                node,
                f"attribute {attr!r} starts with '_': underscore attributes are not available in the sandbox",
            )
            return node
        if attr in INSPECT_ATTRIBUTES:
            self.refuse(
                node, f"attribute {attr!r} reaches frames or code objects, which the sandbox does not allow"
            )
            return node
        new = super().visit_Attribute(node)
        if not isinstance(node.ctx, ast.Load) and isinstance(new, ast.Attribute):
            # `_write_(a).b = c` → `_write_attr_(a).b = c`: the guard then refuses with the built-in type
            # plain Python would raise (AttributeError for `(1).x = 2`, TypeError for `t[0] = 1`).
            call = new.value
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "_write_":
                call.func.id = "_write_attr_"
        return new

    # -- statements the kernel refuses with its own reasons -------------------------------------------------
    def visit_AsyncFunctionDef(self, node: ast.AST) -> None:
        self.refuse(
            node,
            "async/await is not available in the rlm kernel (asyncio is not allowed); "
            "call the helpers directly, they already run requests concurrently",
        )

    visit_Await = visit_AsyncFor = visit_AsyncWith = visit_AsyncFunctionDef

    def visit_TryStar(self, node: ast.TryStar) -> ast.AST:
        """`try: … except* E as g: …`, like `try`, wrapped in `try: … except: _cancel_check_(); raise` so
        that a time-out raised in a handler never leaves the statement wrapped in an exception group (CPython
        groups what handlers raise): the cell still ends with the plain `CellTimeout`. The groups `except*`
        handles are built-in ones: cells cannot subclass `BaseExceptionGroup` (guards.mark_class)."""
        new = self.node_contents_visit(node)
        if new.finalbody:
            new.finalbody.insert(0, self._cancel_check(new.finalbody[0]))
        handler = ast.ExceptHandler(type=None, name=None, body=[self._cancel_check(node), ast.Raise()])
        outer = ast.Try(body=[new], handlers=[handler], orelse=[], finalbody=[])
        for sub in (outer, handler, handler.body[1]):
            copy_locations(sub, node)
        return outer

    def visit_Match(self, node: ast.AST) -> None:
        self.refuse(
            node,
            "match statements are not available in the sandbox (class patterns read attributes "
            "unchecked); use if/elif",
        )

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.scopes.append("function")
        try:
            new = super().visit_Lambda(node)
        finally:
            self.scopes.pop()
        if isinstance(new, ast.Lambda):
            # `lambda x: body if _cell_thread_.in_cell else _outside_cell_()`: like the check that starts
            # every function, a lambda refuses to run outside a cell (one attribute read, no call)
            test = ast.Attribute(value=ast.Name("_cell_thread_", ast.Load()), attr="in_cell", ctx=ast.Load())
            new.body = ast.IfExp(test=test, body=new.body, orelse=_call("_outside_cell_"))
            for sub in ast.walk(new.body):
                if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                    copy_locations(sub, node)
            for sub in (new.body, test, test.value):
                copy_locations(sub, node)
        return new

    def _comprehension(self, node: ast.AST) -> ast.AST:
        self.scopes.append("function")
        try:
            return getattr(super(), f"visit_{type(node).__name__}")(node)
        finally:
            self.scopes.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | list[ast.AST]:
        """Allow annotations (`x: int = 1`, dataclass fields); the target and value are checked as usual."""
        node.annotation = self.visit(node.annotation)
        if node.value is not None:
            node.value = self.visit(node.value)
        node.target = self.visit(node.target)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.check_name(node, node.name)
        self.scopes.append("class")
        self.class_names.append(node.name)
        try:
            node.name, saved = "C", node.name  # the name was checked above, in the enclosing scope
            new = super().visit_ClassDef(node)
            new.name = saved
        finally:
            self.scopes.pop()
            self.class_names.pop()
        # Marked before any decorator runs (so class decorators can tell it is yours) and after the last
        # (a decorator such as dataclass(slots=True) may return a new class).
        first, last = ast.Name("_mark_class_", ast.Load()), ast.Name("_mark_class_", ast.Load())
        copy_locations(first, node)
        copy_locations(last, node)
        new.decorator_list.insert(0, last)
        new.decorator_list.append(first)
        copy_locations(new, node)
        return new

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if self.scopes[-1] == "class":
            node.name = self.mangle(node.name)  # `def __helper(self)` → `_C__helper`
        self.check_name(node, node.name, allow_magic_methods=True)
        self.scopes.append("function")
        try:
            node.name, saved = "f", node.name  # the name was checked above, in the enclosing scope
            new = super().visit_FunctionDef(node)
            new.name = saved
        finally:
            self.scopes.pop()
        has_docstring = (
            new.body
            and isinstance(new.body[0], ast.Expr)
            and isinstance(new.body[0].value, ast.Constant)
            and isinstance(new.body[0].value.value, str)
        )
        new.body.insert(1 if has_docstring else 0, self._cancel_check(node))
        return new

    def visit_For(self, node: ast.For) -> ast.AST | list[ast.stmt]:
        """`for i in <iterable>:` whose first statement is numeric (`total += i * i % 7`):

            _tmpA = <iterable>
            _tmpB = _range_ok_(_tmpA)          # an exact range within ±2**RANGE_BITS
            for i in _getiter_(_tmpA):
                total += i * i % 7 if _tmpB or <the usual test of i> else <guarded>

        Only the first statement of the body uses the flag: it runs right after the loop bound `i` to the
        next item of the range, before anything else can run, and its fast path is the whole statement
        (a pure arithmetic expression whose other names are still tested), so no user code can rebind `i`
        in between — not even a function declaring `global i`.
        """
        target = self._loop_proof_target(node)
        if target is None:
            return super().visit_For(node)
        flag, iterable = self.gen_tmp_name(), self.gen_tmp_name()
        assert isinstance(node.target, ast.Name)
        self._loop_proofs[id(target)] = (node.target.id, flag)
        try:
            new = super().visit_For(node)
        finally:
            self._loop_proofs.pop(id(target), None)
        guarded_iter = new.iter
        assert isinstance(guarded_iter, ast.Call)
        stmts: list[ast.stmt] = [
            ast.Assign(targets=[ast.Name(iterable, ast.Store())], value=guarded_iter.args[0]),
            ast.Assign(
                targets=[ast.Name(flag, ast.Store())],
                value=_call("_range_ok_", ast.Name(iterable, ast.Load())),
            ),
        ]
        guarded_iter.args[0] = ast.Name(iterable, ast.Load())
        for stmt in stmts:
            for sub in ast.walk(stmt):
                if "lineno" in sub._attributes:
                    copy_locations(sub, node.iter)
        copy_locations(guarded_iter.args[0], node.iter)
        return [*stmts, new]

    def _loop_proof_target(self, node: ast.For) -> ast.AST | None:
        """The node of the loop's first statement that gets the loop's flag (see visit_For), or None."""
        if not (
            self.fast_paths and not self._guarded_only and node.body and isinstance(node.target, ast.Name)
        ):
            return None
        name = node.target.id
        if name.startswith("_") or name in _FAST_NAME_EXCLUDED:
            return None
        first = node.body[0]
        target: ast.AST
        if isinstance(first, ast.AugAssign) and isinstance(first.target, ast.Name):
            if first.target.id.startswith("_") or first.target.id in _FAST_NAME_EXCLUDED:
                return None
            capped = type(first.op) in self._CAPPED_BINOPS
            if capped and not _harmless_binop(_as_binop(first), self.max_format_width):
                expr, target = _as_binop(first), first
            else:
                expr = target = first.value
        elif (
            isinstance(first, ast.Assign)
            and len(first.targets) == 1
            and isinstance(first.targets[0], ast.Name)
        ):
            expr = target = first.value
        else:
            return None
        if not isinstance(expr, ast.BinOp):
            return None
        limits = (self.max_int_bits, self.max_format_width)
        if _fast_plan(expr, *limits) is None or _fast_plan(expr, *limits, proven={name: RANGE_BITS}) is None:
            return None
        return target

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        new = super().visit_ExceptHandler(node)
        new.body.insert(0, self._cancel_check(node))
        return new

    def visit_Try(self, node: ast.Try) -> ast.AST:
        new = super().visit_Try(node)
        if new.finalbody:
            new.finalbody.insert(0, self._cancel_check(new.finalbody[0]))
        return new

    @staticmethod
    def _cancel_check(node: ast.AST) -> ast.stmt:
        """`_cancel_check_()`: re-raises a time-out, so handlers and finally blocks cannot absorb it."""
        stmt = ast.Expr(_call("_cancel_check_"))
        for sub in ast.walk(stmt):
            if "lineno" in sub._attributes:
                copy_locations(sub, node)
        return stmt

    # -- size-capped operators ------------------------------------------------------------------------------
    _CAPPED_BINOPS = {ast.Pow: "_pow_", ast.Mult: "_mul_", ast.LShift: "_lshift_", ast.Mod: "_mod_"}

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if self.fast_paths and not self._guarded_only:
            plan = _fast_plan(node, self.max_int_bits, self.max_format_width)
            if plan is not None:
                return self._fast_path(node, plan, self._guarded_binop, self._loop_proof_test(node, node))
        return self._guarded_binop(node)

    def _loop_proof_test(self, node: ast.AST, expr: ast.BinOp) -> ast.expr | None:
        """`flag and <tests of the other names>` when `node` is the first statement of a `for` loop over an
        exact range (visit_For): the loop variable then needs no test of its own."""
        proof = self._loop_proofs.get(id(node))
        if proof is None:
            return None
        name, flag = proof
        plan = _fast_plan(expr, self.max_int_bits, self.max_format_width, proven={name: RANGE_BITS})
        if plan is None:
            return None
        flag_test = ast.Name(flag, ast.Load())
        return ast.BoolOp(op=ast.And(), values=[flag_test, _fast_test(plan)]) if plan else flag_test

    def _guarded_binop(self, node: ast.BinOp) -> ast.AST:
        node = self.node_contents_visit(node)
        helper = self._CAPPED_BINOPS.get(type(node.op))
        if helper is None or _harmless_binop(node, self.max_format_width):
            return node
        call = ast.Call(func=ast.Name(helper, ast.Load()), args=[node.left, node.right], keywords=[])
        copy_locations(call, node)
        copy_locations(call.func, node)
        return call

    def _fast_path(
        self, node: ast.AST, plan: list[tuple[str, int]], guarded: Any, proof: ast.expr | None = None
    ) -> Any:
        """`<native> if <every name is an exact int/float (small enough)> else <guarded>`.

        `plan` lists the names of a pure arithmetic expression in evaluation order, each with whether its
        magnitude must be checked. When the test holds, the guards would let every operation through
        unchanged (see `_fast_plan`), so running it natively gives the same result; anything else — str,
        list, bool, subclasses, objects with operator methods, huge ints — takes the guarded branch.
        """
        native = copy.deepcopy(node)  # names are checked (and refused) while building the guarded branch
        self._guarded_only += 1
        try:
            slow = guarded(node)
        finally:
            self._guarded_only -= 1
        test = _fast_test(plan)
        if proof is not None:
            test = ast.BoolOp(op=ast.Or(), values=[proof, test])  # the loop's flag, else the usual test
        if isinstance(node, ast.stmt):
            new: ast.AST = ast.If(test=test, body=[native], orelse=slow if isinstance(slow, list) else [slow])
        else:
            new = ast.IfExp(test=test, body=native, orelse=slow)
        for sub in ast.walk(test):
            if "lineno" in sub._attributes:
                copy_locations(sub, node)
        copy_locations(new, node)
        return new

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST | list[ast.AST]:
        """`x op= v` → `_inplacevar_`; also `d[k] += v` and `o.a += v` via `_write_` and the read guards."""
        target = node.target
        if isinstance(target, ast.Name):
            if target.id in ("print", "printed"):
                return super().visit_AugAssign(node)
            if type(node.op) not in self._CAPPED_BINOPS or _harmless_binop(
                _as_binop(node), self.max_format_width
            ):
                # Same semantics as `_inplacevar_` (which applies `x op= y` itself): lists still extend in
                # place; the uncapped operators need no guard.
                node.target = self.visit(target)
                node.value = self.visit(node.value)
                return node
            if self.fast_paths and not self._guarded_only:
                binop = _as_binop(node)
                plan = _fast_plan(binop, self.max_int_bits, self.max_format_width)
                if plan is not None:
                    proof = self._loop_proof_test(node, binop)
                    return self._fast_path(node, plan, self._guarded_augassign, proof)
            return self._guarded_augassign(node)
        op = ast.Constant(_IOP[type(node.op)])
        if isinstance(target, ast.Subscript):
            if isinstance(target.slice, ast.Slice):
                self.refuse(node, "augmented assignment to a slice is not allowed; assign the slice instead")
                return node
            obj = self.visit(target.value)
            key = self.visit(target.slice)
            value = self.visit(node.value)
            t_obj, t_key = self.gen_tmp_name(), self.gen_tmp_name()
            stmts: list[ast.stmt] = [
                ast.Assign(targets=[ast.Name(t_obj, ast.Store())], value=obj),
                ast.Assign(targets=[ast.Name(t_key, ast.Store())], value=key),
                ast.Assign(
                    targets=[
                        ast.Subscript(
                            value=_call("_write_", ast.Name(t_obj, ast.Load())),
                            slice=ast.Name(t_key, ast.Load()),
                            ctx=ast.Store(),
                        )
                    ],
                    value=_call(
                        "_inplacevar_",
                        op,
                        _call("_getitem_", ast.Name(t_obj, ast.Load()), ast.Name(t_key, ast.Load())),
                        value,
                    ),
                ),
            ]
        elif isinstance(target, ast.Attribute):
            attr = target.attr = self.mangle(target.attr)
            if (attr.startswith("_") and not PRIVATE_NAME.match(attr)) or attr in INSPECT_ATTRIBUTES:
                self.refuse(
                    node,
                    f"attribute {attr!r} starts with '_': underscore attributes are not available "
                    "in the sandbox",
                )
                return node
            obj = self.visit(target.value)
            value = self.visit(node.value)
            t_obj = self.gen_tmp_name()
            stmts = [
                ast.Assign(targets=[ast.Name(t_obj, ast.Store())], value=obj),
                ast.Assign(
                    targets=[
                        ast.Attribute(
                            value=_call("_write_attr_", ast.Name(t_obj, ast.Load())),
                            attr=attr,
                            ctx=ast.Store(),
                        )
                    ],
                    value=_call(
                        "_inplacevar_",
                        op,
                        _call("_getattr_", ast.Name(t_obj, ast.Load()), ast.Constant(attr)),
                        value,
                    ),
                ),
            ]
        else:  # pragma: no cover - the grammar allows nothing else
            self.refuse(node, "unsupported augmented assignment target")
            return node
        for stmt in stmts:
            for sub in ast.walk(stmt):
                if "lineno" in sub._attributes:
                    copy_locations(sub, node)
        return stmts

    def _guarded_augassign(self, node: ast.AugAssign) -> ast.AST:
        return super().visit_AugAssign(node)

    # -- format specs ---------------------------------------------------------------------------------------
    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        node = self.node_contents_visit(node)
        if node.format_spec is None:
            return node
        call = _call("_format_", node.value, ast.Constant(node.conversion), node.format_spec)
        for sub in (call, call.func):
            copy_locations(sub, node)
        return ast.FormattedValue(
            value=call,
            conversion=-1,
            format_spec=None,
            lineno=node.lineno,
            col_offset=node.col_offset,
            end_lineno=node.end_lineno,
            end_col_offset=node.end_col_offset,
        )


_IOP = {
    ast.Add: "+=",
    ast.Sub: "-=",
    ast.Mult: "*=",
    ast.Div: "/=",
    ast.Mod: "%=",
    ast.Pow: "**=",
    ast.LShift: "<<=",
    ast.RShift: ">>=",
    ast.BitOr: "|=",
    ast.BitXor: "^=",
    ast.BitAnd: "&=",
    ast.FloorDiv: "//=",
    ast.MatMult: "@=",
}


def _small_int(node: ast.expr, bound: int) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and -bound <= node.value <= bound


def _float_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is float


def _number_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _harmless_format(node: ast.expr, width_limit: int) -> bool:
    """A literal printf-style format whose widths/precisions are all within the limit and none is '*'
    (which takes the width from the arguments): the `%` guard would let it through whatever the arguments."""
    if not (isinstance(node, ast.Constant) and type(node.value) in (str, bytes)):
        return False
    if not width_limit:
        return True
    text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
    for width, precision in PERCENT_SPEC.findall(text):
        for part in (width, precision):
            if part == "*" or (part and (len(part) > 7 or int(part) > width_limit)):
                return False
    return True


def _harmless_binop(node: ast.BinOp, width_limit: int) -> bool:
    """Operations that cannot blow up, left unwrapped for speed; each mirrors a guard's unchecked path.

    `x * 3`, `x * 0.5` (the `*` guard passes floats through); `2 ** 10` (small literals), `2.0 ** x`,
    `x ** 0.5` (the `**` guard checks int ** int only); `7 % x`, `1.5 % x` (the `%` guard checks str/bytes
    formatting only) and `'%d items' % n` (a literal format with small widths and no '*').
    """
    left, right = node.left, node.right
    if isinstance(node.op, ast.Mult):
        return _small_int(left, 64) or _small_int(right, 64) or _float_literal(left) or _float_literal(right)
    if isinstance(node.op, ast.Pow):
        # `2 ** 10` (both small literals) or a float literal; `x ** 2` takes a fast path that bounds x
        small_ints = _small_int(left, 1 << 16) and _small_int(right, 64)
        return small_ints or _float_literal(left) or _float_literal(right)
    if isinstance(node.op, ast.Mod):
        return _number_literal(left) or _harmless_format(left, width_limit)
    return False


def _as_binop(node: ast.AugAssign) -> ast.BinOp:
    """`x op= v` seen as `x op v` (for ints and floats they are the same operation)."""
    assert isinstance(node.target, ast.Name)
    return ast.BinOp(left=ast.Name(node.target.id, ast.Load()), op=node.op, right=node.value)


# -- numeric fast paths -------------------------------------------------------------------------------------
# An expression made only of names, int/float literals and arithmetic operators, with at least one operator
# the policy guards (`*`, `%`, `**`, `<<`), runs natively when every name holds an exact int or float —
# integers bounded by 2**_FAST_BITS where their size matters. Integer sizes are bounded statically, so the
# fast path is only emitted when no `*`, `**` or `<<` in it could reach the limit the guards enforce.
_FAST_BITS = (64, 16)  # candidate magnitude bounds (bits) for names, largest first
RANGE_BITS = 64  # a `for` loop's flag (`_range_ok_`) proves its variable is an int below 2**RANGE_BITS
_UNBOUNDED = 1 << 62  # "any size": a name whose magnitude is not checked
_ARITH_OPS = (
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift,
    ast.BitAnd, ast.BitOr, ast.BitXor,
)  # fmt: skip
_FAST_NAME_EXCLUDED = frozenset({"print", "printed"})  # RestrictedPython rewrites these names


class _NotFast(Exception):
    pass


def _arith_names(node: ast.AST, out: list[str]) -> None:
    """Collect the names of a pure arithmetic expression in evaluation order; raise `_NotFast` otherwise."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITH_OPS):
        _arith_names(node.left, out)
        _arith_names(node.right, out)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        _arith_names(node.operand, out)
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id.startswith("_") or node.id in _FAST_NAME_EXCLUDED:
            raise _NotFast
        if node.id not in out:
            out.append(node.id)
    elif not _number_literal(node):
        raise _NotFast


_FLOAT = -1  # `_bits` of an expression known to be a float (a float literal is involved)


def _bits(node: ast.AST, sizes: dict[str, int], limit: int) -> int:
    """Upper bound on the bits of an int result, or `_FLOAT` for a result that is known to be a float;
    raise `_NotFast` if a guarded operation might go over `limit` bits (the checks of caps.safe_mul,
    safe_pow and safe_lshift, which pass anything involving a float through unchecked)."""
    if isinstance(node, ast.Name):
        return sizes[node.id]
    if isinstance(node, ast.Constant):
        return abs(node.value).bit_length() if type(node.value) is int else _FLOAT
    if isinstance(node, ast.UnaryOp):
        a = _bits(node.operand, sizes, limit)
        return _FLOAT if a == _FLOAT else a + 1
    assert isinstance(node, ast.BinOp)
    op = node.op
    a = _bits(node.left, sizes, limit)
    if isinstance(op, ast.Pow):
        exp = node.right
        if not (isinstance(exp, ast.Constant) and type(exp.value) is int and 0 <= exp.value <= 64):
            raise _NotFast
        if a == _FLOAT:
            return _FLOAT
        bits = a * max(exp.value, 1)
    elif isinstance(op, ast.LShift):
        shift = node.right
        if not (isinstance(shift, ast.Constant) and type(shift.value) is int and 0 <= shift.value <= 4096):
            raise _NotFast
        if a == _FLOAT:
            return _FLOAT  # TypeError
        bits = a + shift.value
    else:
        b = _bits(node.right, sizes, limit)
        if a == _FLOAT or b == _FLOAT:
            return _FLOAT  # float arithmetic (or a TypeError for bit operators)
        if isinstance(op, ast.Mult):
            bits = a + b
        elif isinstance(op, ast.Mod):
            return b  # |a % b| < |b|
        elif isinstance(op, (ast.Add, ast.Sub, ast.BitOr, ast.BitXor, ast.BitAnd)):
            return max(a, b) + 1
        else:  # / // >>
            return a + 1
    if limit and bits > limit:
        raise _NotFast
    return bits


def _needs_guard(node: ast.AST, width_limit: int) -> bool:
    return any(
        isinstance(sub, ast.BinOp)
        and type(sub.op) in RLMTransformer._CAPPED_BINOPS
        and not _harmless_binop(sub, width_limit)
        for sub in ast.walk(node)
    )


def _fast_plan(
    node: ast.BinOp, limit: int, width_limit: int, proven: dict[str, int] | None = None
) -> list[tuple[str, int]] | None:
    """The names of `node`, each with the magnitude bound (bits) to check or 0; None if no fast path.

    `proven`: names already known to hold exact ints of at most that many bits; they get no test (and the
    plan may then be empty) but the proof still counts their size."""
    proven = proven or {}
    names: list[str] = []
    try:
        _arith_names(node, names)
    except _NotFast:
        return None
    if not names or not _needs_guard(node, width_limit):
        return None
    if proven and not any(name in proven for name in names):
        return None
    known = {name: bits for name, bits in proven.items() if name in names}
    names = [name for name in names if name not in known]
    guarded_here = type(node.op) in RLMTransformer._CAPPED_BINOPS and not _harmless_binop(node, width_limit)
    if not guarded_here and not (
        _needs_guard(node.left, width_limit) and _needs_guard(node.right, width_limit)
    ):
        # `x * i - t * 0.5`: only `x * i` needs the fast path (and the test of x and i); `t` is used by
        # operations that are native on both paths, so it is left out of the test.
        return None
    for bound in _FAST_BITS:
        try:
            _bits(node, {**dict.fromkeys(names, bound), **known}, limit)
        except _NotFast:
            continue
        plan = []
        for name in names:
            sizes = {**dict.fromkeys(names, bound), **known}
            sizes[name] = _UNBOUNDED  # does the proof still hold whatever the size of this one name?
            try:
                _bits(node, sizes, limit)
                plan.append((name, 0))
            except _NotFast:
                plan.append((name, bound))
        return plan
    return None


def _fast_test(plan: list[tuple[str, int]]) -> ast.expr:
    """The test of a fast path, for each name in evaluation order:
    `_type_(n) is _int_ or _type_(n) is _float_`, or, where the size of an int matters,
    `_type_(n) is _int_ and -B < n and n < B or _type_(n) is _float_`.

    Identity tests only (`in (int, float)` would call a metaclass's `__eq__`); the comparisons run on exact
    ints only, so no user code runs between the test and the native operation. Separate comparisons:
    CPython specialises them, a chained comparison is several times slower."""
    tests: list[ast.expr] = []
    for name, bound in plan:

        def type_is(kind: str, name: str = name) -> ast.expr:
            call = _call("_type_", ast.Name(name, ast.Load()))
            return ast.Compare(left=call, ops=[ast.Is()], comparators=[ast.Name(kind, ast.Load())])

        is_int = type_is("_int_")
        if bound:
            big = 1 << bound
            above = ast.Compare(
                left=ast.Constant(-big), ops=[ast.Lt()], comparators=[ast.Name(name, ast.Load())]
            )
            below = ast.Compare(
                left=ast.Name(name, ast.Load()), ops=[ast.Lt()], comparators=[ast.Constant(big)]
            )
            is_int = ast.BoolOp(op=ast.And(), values=[is_int, above, below])
        tests.append(ast.BoolOp(op=ast.Or(), values=[is_int, type_is("_float_")]))
    return tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.And(), values=tests)


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(name, ast.Load()), args=list(args), keywords=[])


def _is_super_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "super"
        and not node.args
        and not node.keywords
    )


_GENERATED_ATTRS = {"_call_print"}


def _post_check(tree: ast.AST) -> None:
    """Defence in depth: after transforming, no raw underscore attribute access may remain."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            guarded_write = (
                not isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "_write_attr_"
            )
            if guarded_write and (PRIVATE_NAME.match(node.attr) or not node.attr.startswith("_")):
                continue
            if (
                node.attr == "in_cell"
                and isinstance(node.value, ast.Name)
                and node.value.id == "_cell_thread_"
            ):
                continue  # the lambda check visit_Lambda inserts
            if node.attr.startswith("_") and node.attr not in _GENERATED_ATTRS:
                raise _Refusal(node, f"attribute {node.attr!r} survived the policy")
            if isinstance(node.ctx, ast.Load) and node.attr not in _GENERATED_ATTRS:
                raise _Refusal(node, f"unguarded attribute read {node.attr!r} survived the policy")


def _snippet(node: ast.AST | None, filename: str) -> tuple[int | None, str | None]:
    if node is None:
        return None, None
    lineno = getattr(node, "lineno", None)
    if lineno is None:
        return None, None
    line = linecache.getline(filename, lineno).strip()
    if line:
        return lineno, line
    try:
        return lineno, ast.unparse(node).splitlines()[0]
    except Exception:  # noqa: BLE001 - the snippet is decoration only
        return lineno, None


def restrict_ast(
    tree: ast.Module,
    *,
    filename: str,
    limits: Limits | None = None,
    trusted_names: Iterable[str] = (),
    fast_paths: bool = True,
) -> ast.Module:
    """Check and transform one parsed cell; raise `SandboxError` (``line N: '<snippet>' — <reason>``).

    `trusted_names`: names the kernel itself inserted (e.g. its magic dispatcher) that may start with '_'.
    `fast_paths`: emit the numeric fast paths (False: every capped operator goes through its guard).
    Fails closed: any internal error rejects the cell.
    """
    limits = limits if limits is not None else Limits()
    try:
        if not isinstance(tree, ast.Module):
            raise SandboxError(f"the sandbox expects a module syntax tree, got {type(tree).__name__}")
        if limits.max_ast_nodes:
            count = 0
            for _node in ast.walk(tree):
                count += 1
                if count > limits.max_ast_nodes:
                    raise SandboxError(
                        f"the cell has more than {limits.max_ast_nodes} syntax nodes (RLM_MAX_AST_NODES); "
                        "split it into smaller cells"
                    )
        transformer = RLMTransformer(
            trusted_names=trusted_names,
            max_int_bits=limits.max_int_bits,
            max_format_width=limits.max_format_width,
            fast_paths=fast_paths,
        )
        result = transformer.visit(tree)
        if transformer.first_error is not None:
            node, reason = transformer.first_error
            lineno, text = _snippet(node, filename)
            more = len(transformer.errors) - 1
            suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
            raise SandboxError(format_refusal(lineno, text, reason) + suffix)
        _post_check(result)
        ast.fix_missing_locations(result)
    except SandboxError:
        raise
    except _Refusal as exc:
        node, reason = exc.args
        lineno, text = _snippet(node, filename)
        raise SandboxError(format_refusal(lineno, text, reason)) from None
    except KeyboardInterrupt:
        raise
    except RecursionError:
        raise SandboxError("the cell is nested too deeply for the sandbox to check; simplify it") from None
    except BaseException as exc:  # noqa: BLE001 - fail closed on anything else
        raise SandboxError(
            f"the sandbox could not check this cell ({type(exc).__name__}), so it was not run; "
            "simplify the code or report this as a bug"
        ) from None
    register_sandboxed_filename(filename)
    return result
