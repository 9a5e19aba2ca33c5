"""What a `--shared` run's model-written code bound in the notebook's namespace: recorded per block, builtins
it shadowed removed, and listed after the run (`RLMResult.model_bound`, one line under the run).

In a `--shared` run the model's blocks run in the notebook's own namespace, so the names they bind are the
person's names from then on. Binding new names and rebinding the person's variables is what `--shared` is
for; they are listed so the person knows which names now hold model-written values (whatever functions,
classes and objects model code made keep the model's trust: `sandbox.origin`). Shadowing a builtin
(`len = ...`) is never what the person asked for and silently changes every later cell that calls it, so it
is undone after each block (the person's own earlier binding of that name, if any, comes back); preloaded
helpers are restored by `repl.preload.repair` as in every cell. The block's output tells the model.
"""

from __future__ import annotations

import builtins
import itertools
import operator
import types
from dataclasses import dataclass, field

from rlm_kernel.sandbox import made
from rlm_kernel.sandbox.watch import WriteLog, changes

__all__ = ["Bindings", "NEW", "REBOUND", "REPLACED", "DELETED", "SHADOWED", "HELPER", "note"]

NEW = "new"
REBOUND = "rebound your variable"
REPLACED = "replaced your function or class"  # the person will call it: said apart from other variables
DELETED = "deleted your variable"
SHADOWED = "shadowed a builtin: removed"
HELPER = "replaced a helper: restored"
_MISSING = object()


def _changed(ns: dict, before: dict) -> list[tuple[str, object]]:
    """The (name, value) pairs of `ns` that are new or rebound since `before`: exact str keys only (nothing
    else is hashed here: a key's own `__hash__` never runs), not the sandbox's own underscore names
    (`_print`, guards), which model code cannot spell. Compared by identity in C-level passes (a notebook
    holds hundreds of names and a block changes a few)."""
    keys = list(ns)
    get = before.get
    if set(map(type, keys)) == {str}:
        differs = map(operator.is_not, ns.values(), map(get, keys, itertools.repeat(_MISSING)))
        return [(k, ns[k]) for k in itertools.compress(keys, differs) if k[:1] != "_"]
    return [(k, v) for k, v in ns.items() if type(k) is str and k[:1] != "_" and get(k, _MISSING) is not v]


_NOTE_NAMES = 12
_PLAIN = frozenset({int, float, str, bool, bytes, type(None)})  # nothing to record as model-made


@dataclass
class Bindings:
    """Names model code bound, rebound or deleted in a shared namespace during one run, by what it did."""

    protected: dict = field(default_factory=dict)
    """The namespace's preloaded names and values (`ReplState.protected`, live): what `repair` restores."""
    done: dict[str, str] = field(default_factory=dict)
    first: dict | None = None  # the namespace before the first block
    stored: list = field(default_factory=list)  # what model code stored on the person's objects

    recent: set = field(default_factory=set)  # the names the last block bound or rebound

    def finish(self, ns: dict, *, last_block_only: bool = False) -> None:
        """Record what model code left — the values of the names it bound, what it stored on the person's
        objects — as model-made (`sandbox.made`: their displays are framed wherever they are shown). Once,
        when the run ends (an agent's cell: `last_block_only`, as its `done` holds the names of every agent
        cell): no person's cell can show anything before that."""
        kept = (REPLACED, REBOUND, NEW)
        names = self.recent if last_block_only else self.done
        left = [ns[k] for k in names if self.done.get(k) in kept and k in ns and type(ns[k]) not in _PLAIN]
        left += self.stored
        self.stored = []
        first = self.first or {}
        if left:
            made.record(left, known=lambda: {id(v) for v in first.values()})

    def before(self, ns: dict) -> dict:
        """A snapshot of `ns` to compare the block's namespace with (a shallow copy: O(names), no values)."""
        return dict(ns)

    def after(self, ns: dict, before: dict, writes: WriteLog | None = None) -> list[str]:
        """Record what the block changed — names, and with `writes` (`sandbox.watch`) the attributes and
        items it set on the person's objects (`person.helper`); remove builtins it shadowed. Returns a note
        for the block's output (empty when nothing was undone). Run it before the helpers are repaired;
        `finish` when the run ends."""
        undone: list[str] = []
        get = before.get
        changed = _changed(ns, before)
        if self.first is None:
            self.first = before  # the person's objects, as the run found them (not recorded as model-made)
        self.recent = {name for name, _ in changed}
        for name, value in changed:
            old = get(name, _MISSING)
            if name in self.protected:
                if value is not self.protected[name]:  # else the kernel's own (a context model code loaded)
                    self.done.setdefault(name, HELPER)
            elif hasattr(builtins, name):
                if old is _MISSING:
                    del ns[name]
                else:
                    ns[name] = old
                self.done.setdefault(name, SHADOWED)
                undone.append(name)
            elif self.done.get(name) == DELETED:
                self.done[name] = REBOUND  # the person's variable, deleted by an earlier block, bound again
            elif old is _MISSING:
                self.done.setdefault(name, NEW)
            else:
                kind = type(old)
                self.done.setdefault(
                    name, REPLACED if kind is types.FunctionType or kind is type else REBOUND
                )
        added = sum(1 for k, _ in changed if k not in before)
        deleted = before.keys() - ns.keys() if len(ns) != len(before) + added else ()
        for name in deleted:
            if type(name) is str and name[:1] != "_" and name not in self.protected:
                if self.done.get(name) == NEW:
                    del self.done[name]  # made and dropped by model code: nothing of it is left
                else:
                    self.done[name] = DELETED
        for path, what, value in changes(writes, ns, before) if writes is not None else ():
            self.done.setdefault(path, what)
            if value is not None and type(value) not in _PLAIN:
                self.stored.append(value)
        if not undone:
            return []
        names = ", ".join(sorted(undone))
        return [
            f"[note: {names} shadowed Python builtin(s) in the notebook's namespace and was removed; "
            "use another name]"
        ]


def note(bound: dict[str, str]) -> str:
    """The one line shown after a shared run: `model code bound: f, len (shadowed a builtin: removed)`."""
    if not bound:
        return ""
    parts = [name if what == NEW else f"{name} ({what})" for name, what in list(bound.items())[:_NOTE_NAMES]]
    more = len(bound) - _NOTE_NAMES
    tail = f" and {more} more (rlm_result.model_bound)" if more > 0 else ""
    return f"model-written code bound in your namespace: {', '.join(parts)}{tail}"
