"""The numeric fast-path prover: when `a * b`, `a ** 2`, `a % b`, `a << 3` may skip their size guards.

An expression made only of names, int/float literals and arithmetic operators may run natively when every
name holds an exact int or float small enough that no guarded operation in it could reach the limit the
guards (caps.py) enforce. `fast_plan` proves that statically and says which names need a run-time magnitude
test; `fast_test` builds that test. The transformer (policy.py) emits `<native> if <test> else <guarded>`.
"""

from __future__ import annotations

import ast

from rlm_kernel.sandbox.caps import PERCENT_INT, PERCENT_SPEC

__all__ = [
    "CAPPED_BINOPS",
    "FAST_NAME_EXCLUDED",
    "RANGE_BITS",
    "as_binop",
    "call",
    "fast_plan",
    "fast_test",
    "harmless_binop",
]

# The operators whose size the guards cap, and the guard each one is rewritten into.
CAPPED_BINOPS = {ast.Pow: "_pow_", ast.Mult: "_mul_", ast.LShift: "_lshift_", ast.Mod: "_mod_"}


def _small_int(node: ast.expr, bound: int) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and -bound <= node.value <= bound


def _float_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is float


def _number_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _harmless_format(node: ast.expr, width_limit: int) -> bool:
    """A literal printf-style format whose widths/precisions are all within the limit and none is '*'
    (which takes the width from the arguments), with no %d/%i/%u: the `%` guard would let it through
    whatever the arguments."""
    if not (isinstance(node, ast.Constant) and type(node.value) in (str, bytes)):
        return False
    if not width_limit:
        return True
    text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
    if PERCENT_INT.search(text):
        return False  # %d converts its argument with int(): a huge Decimal is checked by the guard
    for width, precision in PERCENT_SPEC.findall(text):
        for part in (width, precision):
            if part == "*" or (part and (len(part) > 7 or int(part) > width_limit)):
                return False
    return True


def harmless_binop(node: ast.BinOp, width_limit: int) -> bool:
    """Operations that cannot blow up, left unwrapped for speed; each mirrors a guard's unchecked path.

    `x * 3`, `x * 0.5` (the `*` guard passes floats through); `2 ** 10` (small literals), `2.0 ** x`,
    `x ** 0.5` (the `**` guard checks int ** int only); `7 % x`, `1.5 % x` (the `%` guard checks str/bytes
    formatting only) and `'%s items' % n` (a literal format with small widths, no '*' and no %d).
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


def as_binop(node: ast.AugAssign) -> ast.BinOp:
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
FAST_NAME_EXCLUDED = frozenset({"print", "printed"})  # RestrictedPython rewrites these names


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
        if node.id.startswith("_") or node.id in FAST_NAME_EXCLUDED:
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


# `-`, `|`, `&`, `^` are guarded too (set and dict-view algebra in steps, setops.py) unless a side is a number
_SET_BINOPS = (ast.Sub, ast.BitOr, ast.BitAnd, ast.BitXor)


def _guarded_op(node: ast.BinOp, width_limit: int) -> bool:
    """The policy rewrites this operator into a guard (or a test of its left operand)."""
    if type(node.op) in CAPPED_BINOPS:
        return not harmless_binop(node, width_limit)
    if isinstance(node.op, _SET_BINOPS):
        return not (_number_literal(node.left) or _number_literal(node.right))
    return False


def _needs_guard(node: ast.AST, width_limit: int) -> bool:
    return any(isinstance(sub, ast.BinOp) and _guarded_op(sub, width_limit) for sub in ast.walk(node))


def fast_plan(
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
    guarded_here = _guarded_op(node, width_limit)
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


def fast_test(plan: list[tuple[str, int]]) -> ast.expr:
    """The test of a fast path, for each name in evaluation order:
    `_type_(n) is _int_ or _type_(n) is _float_`, or, where the size of an int matters,
    `_type_(n) is _int_ and -B < n and n < B or _type_(n) is _float_`.

    Identity tests only (`in (int, float)` would call a metaclass's `__eq__`); the comparisons run on exact
    ints only, so no user code runs between the test and the native operation. Separate comparisons:
    CPython specialises them, a chained comparison is several times slower."""
    tests: list[ast.expr] = []
    for name, bound in plan:

        def type_is(kind: str, name: str = name) -> ast.expr:
            of = call("_type_", ast.Name(name, ast.Load()))
            return ast.Compare(left=of, ops=[ast.Is()], comparators=[ast.Name(kind, ast.Load())])

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


def call(name: str, *args: ast.expr) -> ast.Call:
    """The AST of `name(*args)` (a guard call)."""
    return ast.Call(func=ast.Name(name, ast.Load()), args=list(args), keywords=[])
