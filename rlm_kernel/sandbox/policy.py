"""The compile-time policy: `RLMTransformer` (RestrictedPython's transformer with the rlm kernel's rules) and
`restrict_ast`, which checks and rewrites one cell.

The name rules live in names.py, the numeric fast-path prover in fastpath.py, the registry of checked
filenames in filenames.py (all re-exported here for code that imports them from the policy).
Fails closed: any internal error while checking a cell rejects the cell with a `SandboxError`.

Why one module of ~750 lines: `RLMTransformer` is one NodeTransformer subclass whose `visit_*` methods are the
rules, read in order; they share its state (scopes, enclosing class names, the loop proofs of the fast paths)
and RestrictedPython's base class, so splitting the class into mixins would scatter one rule set without
making any part testable alone (restrict_ast is the unit the tests drive).
"""

from __future__ import annotations

import ast
import copy
import linecache
import re
from collections.abc import Iterable
from typing import Any

from RestrictedPython.transformer import INSPECT_ATTRIBUTES, RestrictingNodeTransformer, copy_locations

from rlm_kernel.sandbox.errors import SandboxError, format_refusal
from rlm_kernel.sandbox.fastpath import (
    CAPPED_BINOPS,
    FAST_NAME_EXCLUDED,
    RANGE_BITS,
    as_binop,
    fast_plan,
    fast_test,
    harmless_binop,
)
from rlm_kernel.sandbox.fastpath import call as _call
from rlm_kernel.sandbox.filenames import is_sandboxed_filename, register_sandboxed_filename
from rlm_kernel.sandbox.limits import Limits
from rlm_kernel.sandbox.names import (
    ALLOWED_DUNDER_METHODS,
    ALWAYS_REFUSED,
    CLASS_BODY_DUNDERS,
    ENUM_HOOKS,
    EXCEPTION_DUNDERS,
    MODULE_DUNDERS,
    PRIVATE_NAME,
    READABLE_DUNDERS,
    REFUSED_NAMES,
)

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

# IPython history names that may be read: _ __ ___ _N _i _ii _iii _iN
_HISTORY_NAME = re.compile(r"_(?:\d+|_{1,2}|i{1,3}|i\d+)\Z")


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
        self._comprehensions = 0  # > 0 inside a comprehension (visit_Compare's chains bind with a lambda)
        # ids of the comparisons in the first iterable of a comprehension written in a class body: that
        # iterable runs in the class scope, which a lambda cannot see and where `:=` may not stand
        self._class_scope_compares: set[int] = set()

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
        return _keyed_call(super().visit_Call(node))

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
        if self.scopes[-1] == "class":
            first = node.generators[0].iter  # type: ignore[attr-defined]
            self._class_scope_compares.update(id(n) for n in ast.walk(first) if isinstance(n, ast.Compare))
        self.scopes.append("function")
        self._comprehensions += 1
        try:
            return getattr(super(), f"visit_{type(node).__name__}")(node)
        finally:
            self.scopes.pop()
            self._comprehensions -= 1

    visit_ListComp = visit_GeneratorExp = _comprehension

    def visit_DictComp(self, node: ast.DictComp) -> ast.AST:
        """`{k: v for ...}` → `_dict_comp_(((k, v) for ...))`: the keys inserted in chunks, equal costly tuple
        keys matched in steps and keys sharing one hash fed in short C calls (bulk.dict_comp)."""
        new = self._comprehension(node)
        if not isinstance(new, ast.DictComp):
            return new
        pair = ast.Tuple(elts=[new.key, new.value], ctx=ast.Load())
        return self._built(node, "_dict_comp_", ast.GeneratorExp(elt=pair, generators=new.generators))

    def visit_SetComp(self, node: ast.SetComp) -> ast.AST:
        """`{e for ...}` → `_set_comp_((e for ...))`: built as `set()` builds (bulk.set_comp)."""
        new = self._comprehension(node)
        if not isinstance(new, ast.SetComp):
            return new
        return self._built(node, "_set_comp_", ast.GeneratorExp(elt=new.elt, generators=new.generators))

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        """`{k: v, **m}` → `_dict_display_((k, v), (m,))` unless every key is a constant: the keys are
        inserted as the comprehensions' are (bulk.dict_display), `**m` merged in chunks."""
        node = self.node_contents_visit(node)
        if all(key is not None and _constant(key) for key in node.keys):
            return node
        entries: list[ast.expr] = [
            ast.Tuple(elts=[value] if key is None else [key, value], ctx=ast.Load())
            for key, value in zip(node.keys, node.values, strict=True)
        ]
        return self._built(node, "_dict_display_", *entries)

    @staticmethod
    def _built(node: ast.AST, helper: str, *args: ast.expr) -> ast.expr:
        call = _call(helper, *args)
        for sub in ast.walk(call):
            if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                copy_locations(sub, node)
        return call

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
        if name.startswith("_") or name in FAST_NAME_EXCLUDED:
            return None
        first = node.body[0]
        target: ast.AST
        if isinstance(first, ast.AugAssign) and isinstance(first.target, ast.Name):
            if first.target.id.startswith("_") or first.target.id in FAST_NAME_EXCLUDED:
                return None
            capped = type(first.op) in self._CAPPED_BINOPS
            if capped and not harmless_binop(as_binop(first), self.max_format_width):
                expr, target = as_binop(first), first
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
        if fast_plan(expr, *limits) is None or fast_plan(expr, *limits, proven={name: RANGE_BITS}) is None:
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
    _CAPPED_BINOPS = CAPPED_BINOPS

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if self.fast_paths and not self._guarded_only:
            plan = fast_plan(node, self.max_int_bits, self.max_format_width)
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
        plan = fast_plan(expr, self.max_int_bits, self.max_format_width, proven={name: RANGE_BITS})
        if plan is None:
            return None
        flag_test = ast.Name(flag, ast.Load())
        return ast.BoolOp(op=ast.And(), values=[flag_test, fast_test(plan)]) if plan else flag_test

    def _guarded_binop(self, node: ast.BinOp) -> ast.AST:
        node = self.node_contents_visit(node)
        if type(node.op) in _SET_BINOPS:
            return _set_binop(node)
        helper = self._CAPPED_BINOPS.get(type(node.op))
        if helper is None or harmless_binop(node, self.max_format_width):
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
        unchanged (see `fast_plan`), so running it natively gives the same result; anything else — str,
        list, bool, subclasses, objects with operator methods, huge ints — takes the guarded branch.
        """
        native = copy.deepcopy(node)  # names are checked (and refused) while building the guarded branch
        self._guarded_only += 1
        try:
            slow = guarded(node)
        finally:
            self._guarded_only -= 1
        test = fast_test(plan)
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
            if type(node.op) in _SET_BINOPS and not _number(node.value):
                return self._set_augassign(node)
            if type(node.op) not in self._CAPPED_BINOPS or harmless_binop(
                as_binop(node), self.max_format_width
            ):
                # Same semantics as `_inplacevar_` (which applies `x op= y` itself): lists still extend in
                # place; the uncapped operators need no guard.
                node.target = self.visit(target)
                node.value = self.visit(node.value)
                return node
            if self.fast_paths and not self._guarded_only:
                binop = as_binop(node)
                plan = fast_plan(binop, self.max_int_bits, self.max_format_width)
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
            if not _constant(key):  # a costly tuple key of a hash table is looked up in steps (keys.py)
                key = _call("_wkey_", ast.Name(t_obj, ast.Load()), key)
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

    def _set_augassign(self, node: ast.AugAssign) -> ast.AST:
        """`s -= t` (and `|=`, `&=`, `^=`) on a name: `if <s is an exact int or float>: s -= t` natively,
        else `s = _inplacevar_('-=', s, t)`, which runs set and dict algebra in steps (setops.inplace)."""
        assert isinstance(node.target, ast.Name)
        native = copy.deepcopy(node)
        native.target = self.visit(native.target)
        native.value = self.visit(native.value)
        guarded = self._guarded_augassign(node)
        name = node.target.id

        def type_is(kind: str) -> ast.expr:
            of = _call("_type_", ast.Name(name, ast.Load()))
            return ast.Compare(left=of, ops=[ast.Is()], comparators=[ast.Name(kind, ast.Load())])

        test = ast.BoolOp(op=ast.Or(), values=[type_is("_int_"), type_is("_float_")])
        new = ast.If(test=test, body=[native], orelse=guarded if isinstance(guarded, list) else [guarded])
        for sub in ast.walk(new):
            if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                copy_locations(sub, node)
        return new

    def _guarded_augassign(self, node: ast.AugAssign) -> ast.AST:
        return super().visit_AugAssign(node)

    # -- item writes ----------------------------------------------------------------------------------------
    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        """`d[k] = v` / `del d[k]` → `d[_wkey_(d, k)] = v`: the guard does `_write_`'s check and hands C the
        key to use — a costly tuple key of a hash table is looked up in steps first (keys.py). Any other
        object expression is bound once (`(_tmpN := f())[_wkey_(_tmpN, k)]`), except in class bodies and
        comprehensions (`_write_(obj)[k]`, as RestrictedPython writes it); constant keys and slices keep
        `_write_(obj)[k]`."""
        if isinstance(node.ctx, ast.Load):
            new = super().visit_Subscript(node)
            if (
                isinstance(new, ast.Call)
                and isinstance(new.func, ast.Name)
                and new.func.id == "_getitem_"
                and len(new.args) == 2
                and isinstance(new.args[1], ast.Constant)
                and type(new.args[1].value) in (str, int)
            ):
                new.func.id = "_getitem_c_"  # `r['sq']`, `p[0]`: a constant key needs no key guard
            return new
        node = self.node_contents_visit(node)
        obj = node.value
        if isinstance(node.slice, ast.Slice) or _constant(node.slice):
            node.value = _call("_write_", obj)
        elif isinstance(obj, ast.Name):
            node.slice = _call("_wkey_", ast.Name(obj.id, ast.Load()), node.slice)
        elif self.scopes[-1] != "class" and not self._comprehensions:
            tmp = self.gen_tmp_name()
            node.value = ast.NamedExpr(target=ast.Name(tmp, ast.Store()), value=obj)
            node.slice = _call("_wkey_", ast.Name(tmp, ast.Load()), node.slice)
        else:
            node.value = _call("_write_", obj)
        for sub in ast.walk(node):
            if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                copy_locations(sub, node)
        return node

    # -- set displays ---------------------------------------------------------------------------------------
    def visit_Set(self, node: ast.Set) -> ast.AST:
        """`{a, *x}` → `_set_display_([a, *x])` unless every item is a constant: the guard builds the set in
        chunks the time limit can stop (keys sharing one hash make each insertion walk all the others) and
        refuses tuples nested with sharing whose hash would run for minutes (bulk.set_display)."""
        node = self.node_contents_visit(node)
        if _constant(node):
            return node
        items = ast.List(elts=node.elts, ctx=ast.Load())
        call = _call("_set_display_", items)
        for sub in (call, call.func, items):
            copy_locations(sub, node)
        return call

    # -- comparisons ----------------------------------------------------------------------------------------
    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        """`a == b` → `_eq_(a, b)` (and `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`) when neither side is a
        constant: the guards compare lists and tuples in steps the time limit can stop (compare.py). A
        comparison with a constant stays a C comparison (its cost is bounded by the constant). A chain
        (`a < b < c`) is rewritten as `_lt_(a, b) and _lt_(b, c)` when its inner operands are names or
        constants (evaluating them twice has no effect); other chains stay C comparisons."""
        node = self.node_contents_visit(node)
        operands = [node.left, *node.comparators]
        helpers = [_COMPARE_GUARDS.get(type(op)) for op in node.ops]
        if len(node.ops) > 1 and not all(isinstance(o, (ast.Name, ast.Constant)) for o in operands[1:-1]):
            return self._bound_chain(node, operands, helpers)
        parts: list[ast.expr] = []
        for i, helper in enumerate(helpers):
            left, right = operands[i], operands[i + 1]
            if i > 0:
                left = copy.deepcopy(left)
            parts.append(_compare_part(node.ops[i], helper, left, right))
        if len(parts) == 1 and isinstance(parts[0], ast.Compare):
            return node
        new: ast.expr = parts[0] if len(parts) == 1 else ast.BoolOp(op=ast.And(), values=parts)
        for sub in ast.walk(new):
            if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                copy_locations(sub, node)
        copy_locations(new, node)
        return new

    def _bound_chain(self, node: ast.Compare, operands: list[ast.expr], helpers: list[str | None]) -> ast.AST:
        """`a < f() < b` with each inner operand evaluated once, in order, and the chain short-circuiting:
        `_lt_(a, (_tmp0 := f())) and _lt_(_tmp0, b)`; inside a comprehension (where `:=` may not stand)
        `(lambda _tmp0, _tmp1: _lt_(_tmp0, _tmp1) and _lt_(_tmp1, b))(a, f())`, nesting for longer chains."""
        if any(
            isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr))
            for o in operands
            for n in ast.walk(o)
        ):
            self.refuse(node, "write this chained comparison as separate comparisons joined by 'and'")
            return node
        if id(node) in self._class_scope_compares:
            self.refuse(
                node,
                "a chained comparison in the first iterable of a comprehension in a class body: "
                "write it as separate comparisons joined by 'and', or compute it before the comprehension",
            )
            return node

        def compare(i: int, left: ast.expr, right: ast.expr) -> ast.expr:
            return _compare_part(node.ops[i], helpers[i], left, right)

        last = len(node.ops) - 1
        if not self._comprehensions:
            names = [self.gen_tmp_name() for _ in operands]
            parts = []
            left: ast.expr = operands[0]
            for i in range(len(node.ops)):
                right = operands[i + 1]
                if i < last and not isinstance(right, (ast.Name, ast.Constant)):
                    bound = ast.NamedExpr(target=ast.Name(names[i + 1], ast.Store()), value=right)
                    parts.append(compare(i, left, bound))
                    left = ast.Name(names[i + 1], ast.Load())
                else:
                    parts.append(compare(i, left, right))
                    left = copy.deepcopy(right)
            new: ast.expr = ast.BoolOp(op=ast.And(), values=parts)
        else:

            def chain(i: int, left_name: str) -> ast.expr:
                right = operands[i + 1]
                if i == last:
                    return compare(i, ast.Name(left_name, ast.Load()), right)
                name = self.gen_tmp_name()
                body = ast.BoolOp(
                    op=ast.And(),
                    values=[
                        compare(i, ast.Name(left_name, ast.Load()), ast.Name(name, ast.Load())),
                        chain(i + 1, name),
                    ],
                )
                return _bind(body, [name], [right])

            first, second = self.gen_tmp_name(), self.gen_tmp_name()
            body = ast.BoolOp(
                op=ast.And(),
                values=[
                    compare(0, ast.Name(first, ast.Load()), ast.Name(second, ast.Load())),
                    chain(1, second),
                ],
            )
            new = _bind(body, [first, second], operands[:2])
        for sub in ast.walk(new):
            if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                copy_locations(sub, node)
        return new

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


_COMPARE_GUARDS: dict[type, str] = {
    ast.Eq: "_eq_",
    ast.NotEq: "_ne_",
    ast.Lt: "_lt_",
    ast.LtE: "_le_",
    ast.Gt: "_gt_",
    ast.GtE: "_ge_",
    ast.In: "_in_",
    ast.NotIn: "_not_in_",
}


_SET_BINOPS = {ast.Sub: "_sub_", ast.BitOr: "_bitor_", ast.BitAnd: "_bitand_", ast.BitXor: "_bitxor_"}


def _set_binop(node: ast.BinOp) -> ast.expr:
    """`a - b`, `a | b`, `a & b`, `a ^ b` with no number constant on either side: set and dict-view algebra
    is one C call over every item (setops.py). A name holding an exact int or float takes the operator
    itself (`a - b if _type_(a) is _int_ or _type_(a) is _float_ else _sub_(a, b)`: no call); any other
    left operand the guard, which tests the same first."""
    left, right = node.left, node.right
    if _number(left) or _number(right) or _constant(left) and _constant(right):
        return node
    helper = _SET_BINOPS[type(node.op)]
    if not isinstance(left, ast.Name):
        new: ast.expr = _call(helper, left, right)
    else:

        def type_is(kind: str) -> ast.expr:
            of = _call("_type_", ast.Name(left.id, ast.Load()))
            return ast.Compare(left=of, ops=[ast.Is()], comparators=[ast.Name(kind, ast.Load())])

        test = ast.BoolOp(op=ast.Or(), values=[type_is("_int_"), type_is("_float_")])
        guarded = _call(helper, ast.Name(left.id, ast.Load()), copy.deepcopy(right))
        new = ast.IfExp(test=test, body=node, orelse=guarded)
    for sub in ast.walk(new):
        if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
            copy_locations(sub, node)
    return new


def _number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, bool)


_KEYED_CALLS = frozenset({"get", "pop", "setdefault", "add", "discard", "move_to_end"})


def _keyed_call(node: ast.AST) -> ast.AST:
    """`x.get(k, ...)` (and `pop`, `setdefault`, `add`, `discard`, `move_to_end`) after RestrictedPython's
    rewrite to `_getattr_(x, 'get')(k, ...)`: a key that is a constant, or a name holding an exact str or
    int, takes `_kattr_` (the real C method of a dict or set, no wrapper: such keys compare cheaply); any
    other key `_kcall_(x, 'get', k, ...)`, which looks a costly tuple key of a hash table up in steps
    (keys.py)."""
    if not (
        isinstance(node, ast.Call)
        and not node.keywords
        and node.args
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and isinstance(node.func, ast.Call)
        and isinstance(node.func.func, ast.Name)
        and node.func.func.id == "_getattr_"
        and len(node.func.args) == 2
        and isinstance(node.func.args[1], ast.Constant)
        and node.func.args[1].value in _KEYED_CALLS
    ):
        return node
    obj, name = node.func.args
    key = node.args[0]
    fast = ast.Call(func=_call("_kattr_", obj, name), args=node.args, keywords=[])
    if _constant(key):
        new: ast.expr = fast
    elif isinstance(key, ast.Name):

        def type_is(kind: str) -> ast.expr:
            of = _call("_type_", ast.Name(key.id, ast.Load()))
            return ast.Compare(left=of, ops=[ast.Is()], comparators=[ast.Name(kind, ast.Load())])

        test = ast.BoolOp(op=ast.Or(), values=[type_is("_str_"), type_is("_int_")])
        slow = _call("_kcall_", copy.deepcopy(obj), copy.deepcopy(name), *copy.deepcopy(node.args))
        new = ast.IfExp(test=test, body=fast, orelse=slow)
    else:
        new = _call("_kcall_", obj, name, *node.args)
    for sub in ast.walk(new):
        if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
            copy_locations(sub, node)
    return new


def _compare_part(op: ast.cmpop, helper: str | None, left: ast.expr, right: ast.expr) -> ast.expr:
    """One comparison of a chain: the guard call, or a C comparison when a side is a constant — except `x in
    {constant set}`, which hashes x in C (a tuple nested with sharing or 200 000 deep: minutes, or a
    crash): a name that holds an exact int or str takes the C test, anything else `_in_`."""
    plain = ast.Compare(left=left, ops=[op], comparators=[right])
    if helper is None or _constant(left):
        return plain
    if not _constant(right):
        return _call(helper, left, right)
    if not isinstance(op, (ast.In, ast.NotIn)) or not isinstance(right, ast.Set):
        return plain
    if not isinstance(left, ast.Name):
        return _call(helper, left, right)

    def type_is(kind: str) -> ast.expr:
        of = _call("_type_", ast.Name(left.id, ast.Load()))
        return ast.Compare(left=of, ops=[ast.Is()], comparators=[ast.Name(kind, ast.Load())])

    test = ast.BoolOp(op=ast.Or(), values=[type_is("_int_"), type_is("_str_")])
    guarded = _call(helper, ast.Name(left.id, ast.Load()), copy.deepcopy(right))
    return ast.IfExp(test=test, body=plain, orelse=guarded)


def _bind(body: ast.expr, names: list[str], values: list[ast.expr]) -> ast.expr:
    """`(lambda names: body)(values)`: the values evaluated once, in order, before the body."""
    params = ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=n) for n in names], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    return ast.Call(func=ast.Lambda(args=params, body=body), args=list(values), keywords=[])


def _constant(node: ast.AST) -> bool:
    """A literal constant, or a tuple/list/set display of them (comparing with it costs at most its size)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_constant(e) for e in node.elts)
    return False


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
