"""The names and attributes the sandbox treats specially: rules shared by the policy and the run-time guards.

Data only (frozensets, a regex, the refusal reasons): the transformer (policy.py) refuses or rewrites by these
rules and the guards (guards.py) apply the same lists at run time, so both read them from here.
"""

from __future__ import annotations

import re

__all__ = [
    "ALLOWED_DUNDER_METHODS",
    "ALWAYS_REFUSED",
    "CLASS_BODY_DUNDERS",
    "ENUM_HOOKS",
    "EXCEPTION_DUNDERS",
    "MODULE_DUNDERS",
    "PRIVATE_NAME",
    "READABLE_DUNDERS",
    "REFUSED_NAMES",
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
