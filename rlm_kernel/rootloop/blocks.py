"""Running a root reply's ```repl blocks in the run's namespace: in order, as model-written code, under the
cell's limits, each with the full per-block output allowance; the FINAL gate learns what each block read.

Functions of the running run (`rootloop.turn_loop.TurnLoop`: its namespace, state and tracker).
"""

from __future__ import annotations

import contextlib
from typing import Any

from rlm_kernel import sandbox
from rlm_kernel.repl import preload
from rlm_kernel.repl.gate import block_facts, names_from_sub_calls, prints_only_literals
from rlm_kernel.rootloop import answer_dict
from rlm_kernel.rootloop.trajectory import Turn
from rlm_kernel.sandbox.origin import model_code
from rlm_kernel.sandbox.watch import watching

__all__ = ["execute", "execute_blocks"]


def execute_blocks(run: Any, blocks: tuple[str, ...], turn: Turn, notes: list[str]) -> None:
    """Run the reply's blocks in order, stopping after a block that ends the run or raises."""
    tracker = run.state.run
    assert tracker is not None
    outputs: list[str] = []
    for i, code in enumerate(blocks, 1):
        reads, _ = block_facts(code)
        if reads:
            tracker.gate.code_read_context = True
        tracker.gate.before_block(code)
        armed = answer_dict.before(run.ns)
        before = len(tracker.calls)
        stdout, value, error = execute(run, code, turn.index)
        tracker.gate.note_sizes(code, run.ns)  # a text's len() is its characters, not a count asked for
        if not tracker.final_set:
            answer_dict.check(  # the reference library's answer["ready"]
                run.ns,
                tracker,
                code,
                armed,
                run.loaded,
                cite_wanted=run.state.options.cite,
                printed=stdout,
            )
        # what a context-free sub-call said is the sub-model's guess, not evidence from the context (a
        # sub-RLM printed such a refusal and had it accepted as its FINAL by gate rule 3)
        blind = any(c.ok and not c.saw_context for c in tracker.calls[before:])
        if any(c.ok and c.saw_context for c in tracker.calls[before:]):
            tracker.gate.flow.names.update(names_from_sub_calls(code))  # what they answered is evidence
        if not prints_only_literals(code) and not blind:
            tracker.gate.saw(stdout + ("\n" + value if value is not None else ""))
        label = f"[block {i} of {len(blocks)}]\n" if len(blocks) > 1 else ""
        outputs.append(label + stdout)
        turn.value, turn.error = value, error
        left = len(blocks) - i
        if tracker.final_set or tracker.interrupted or tracker.budget_error:
            break
        if error and left:
            notes.append(
                f"Block {i} of {len(blocks)} raised an error; the {left} block(s) after it did not run."
            )
            break
        if getattr(run.state.session, "cancelled", None):
            break
    turn.stdout = "".join(outputs)


def execute(run: Any, code: str, index: int) -> tuple[str, str | None, str | None]:
    """Run one block in the run's namespace: (stdout, value repr, error)."""

    if run.state.session is None:
        run.state.session = sandbox.SandboxSession()
    session = run.state.session
    preload.repair(run.ns)
    sandbox.repair_namespace(run.ns, session)
    # A block's output goes to the root, not to the notebook: give each block the full per-cell output
    # allowance, and leave the cell's own accounting as it was.
    saved = (getattr(session, "output_used", 0), getattr(session, "output_dropped", 0))
    session.output_used, session.output_dropped = 0, 0
    bound = getattr(run, "bindings", None)  # a --shared run: what model code binds in the notebook is listed
    before = bound.before(run.ns) if bound is not None else None
    notes: list[str] = []
    writes = watching(run.ns) if bound is not None else contextlib.nullcontext()
    log = None
    try:
        # model-written: may not run magics or change settings (sandbox/origin.py); in a --shared run the
        # attributes and items it sets on the person's objects are listed too (sandbox/watch.py)
        with model_code(), writes as log:
            outcome = sandbox.run_source(code, run.ns, session, filename=f"<rlm turn {index}>", model=True)
        dropped = session.output_dropped
    finally:
        session.output_used, session.output_dropped = saved
        if bound is not None and before is not None:  # also after an interrupt: no shadowed builtin stays
            notes = bound.after(run.ns, before, log)
    stdout = outcome.stdout
    if dropped:
        stdout += f"\n[output cut: {dropped:,} more bytes over the per-block limit (RLM_OUTPUT_BYTES)]"
    for line in notes:
        stdout += ("\n" if stdout and not stdout.endswith("\n") else "") + line + "\n"
    preload.repair(run.ns)
    return stdout, outcome.value_repr, outcome.error
