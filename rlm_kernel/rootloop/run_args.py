"""The run options that are not plain data — `tools=`, `sub_tools=`, `returns=`, `continue_from=` — checked
and converted for `rlm_run`, and the `%%rlm` options that name notebook variables (`--tools`, `--returns`,
`--system`, `--system-extra`, `--continue`) resolved in the notebook's namespace."""

from __future__ import annotations

import rlm_kernel.rootloop.answer_types as answer_types
import rlm_kernel.rootloop.continuation as continuation
import rlm_kernel.rootloop.tools as tools

__all__ = ["SPECIAL", "from_magic", "split"]

SPECIAL = ("tools", "sub_tools", "returns", "continue_from")
_BUILTIN_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "list": list, "dict": dict}


def split(options: dict, reserved: set[str]) -> tuple[dict, dict, object]:
    """(plain options, converted special options, the result to continue or None); ValueError says why."""
    plain = {k: v for k, v in options.items() if k not in SPECIAL}
    special: dict[str, object] = {}
    if "tools" in options and options["tools"] is not None:
        special["tools"] = tools.check_tools(options["tools"], reserved)
    if "sub_tools" in options and options["sub_tools"] is not None:
        special["sub_tools"] = tools.check_tools(options["sub_tools"], reserved)
    if "returns" in options and options["returns"] is not None:
        special["returns"] = answer_types.check_type(options["returns"])
    previous = options.get("continue_from")
    if previous is not None:
        previous = continuation.check(previous)
    return plain, special, previous


def _variable(ns: dict, name: str, option: str) -> object:
    if not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"{option} takes the name of a notebook variable, got {name!r}")
    if name not in ns:
        raise ValueError(f"{option} {name}: there is no variable named {name!r} in the notebook")
    return ns[name]


def from_magic(options: dict, ns: dict, reserved: set[str]) -> tuple[dict, object]:
    """`%%rlm` options with variable names replaced by their values: (run options, result to continue)."""
    out = dict(options)
    previous = None
    if out.pop("continue", False):
        previous = ns.get("rlm_result")
        if previous is None:
            raise ValueError("--continue: there is no earlier run in this notebook (rlm_result is not set)")
        previous = continuation.check(previous)
    names = out.pop("tools", None)
    if names is not None:
        chosen = [n.strip() for n in str(names).split(",") if n.strip()]
        if not chosen:
            raise ValueError(
                "--tools takes function names separated by commas, e.g. --tools lookup,summarize"
            )
        out["tools"] = tools.check_tools({n: _variable(ns, n, "--tools") for n in chosen}, reserved)
    name = out.pop("returns", None)
    if name is not None:
        value = _BUILTIN_TYPES.get(name) or _variable(ns, name, "--returns")
        out["returns"] = answer_types.check_type(value)
    for option, key in (("--system", "system"), ("--system-extra", "system_extra")):
        name = out.pop(key, None)
        if name is not None:
            value = _variable(ns, name, option)
            if type(value) is not str:
                raise ValueError(f"{option} {name}: the variable must hold the prompt as a str")
            out["system_prompt" if key == "system" else "system_prompt_extra"] = value
    if out.pop("no_best_effort", False):
        out["best_effort"] = False
    return out, previous
