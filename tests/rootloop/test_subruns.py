"""Parallel sub-RLMs in-process: every block runs on the calling (main) thread, and one runs while the others
wait for models — their root calls and the calls their blocks make overlap; answers come back in input
order, each block's output stays its own."""

from __future__ import annotations

import gc
import os
import re
import signal
import threading
import time

import pytest

import rlm_kernel.sandbox as sandbox
from rlm_kernel import cooperative
from rlm_kernel.repl import preload
from rlm_kernel.repl.context import LoadedContext
from rlm_kernel.repl.state import ReplState, RunTracker
from rlm_kernel.rootloop.driver import ROOT_LOOP
from rlm_kernel.sandbox import SandboxSession, new_namespace
from tests.llm_server import LLMTestServer, Reply
from tests.rootloop import asking_subs
from tests.rootloop.inflight import Gate, max_overlap
from tests.rootloop.script import ROOT_MARK, SUB_MARK, repl


def three_turns(rec) -> str:  # noqa: ANN001 - a RecordedRequest
    if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt:
        turn = rec.prompt.count("Output of turn") + 1
        return [
            repl("words = context.split()\nprint(len(words))"),
            repl("n = len(words)\nprint(n)"),
            repl("FINAL(n)"),
        ][min(turn, 3) - 1]
    return "child"


def test_blocks_run_on_the_calling_thread_one_at_a_time_while_root_calls_overlap(
    client_on_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    client_on_server.latency = 0.2
    client_on_server.reply_with(three_turns)
    threads: set[int] = set()
    running = [0, 0]  # now, most at once
    real = sandbox.run_source

    def watched(*args: object, **kwargs: object) -> object:
        threads.add(threading.get_ident())
        running[0] += 1
        running[1] = max(running)
        try:
            return real(*args, **kwargs)
        finally:
            running[0] -= 1

    monkeypatch.setattr(sandbox, "run_source", watched)
    session = SandboxSession()
    ns = new_namespace(session)
    preload.populate(
        ns, ReplState(session=session, root_loop=ROOT_LOOP), LoadedContext("", "text", "nothing loaded")
    )
    answers = ns["rlm_query_batched"](["a b", "a b c", "a b c d"])
    assert answers == ["2", "3", "4"]
    assert threads == {threading.get_ident()} and running[1] == 1  # 9 blocks, all here, never two at once
    subs = sorted((r for r in client_on_server.requests if SUB_MARK in r.prompt), key=lambda r: r.time)
    assert len(subs) == 9
    firsts = [r for r in subs if "Output of turn" not in r.prompt]
    seconds = [r for r in subs if "Output of turn 1" in r.prompt and "Output of turn 2" not in r.prompt]
    # the three first-turn calls were all sent before any sub-RLM's second turn: they overlapped
    assert max(r.time for r in firsts) < min(r.time for r in seconds)
    preload.forget(ns)


def _batch(prompts: list[str]) -> tuple[list[str], SandboxSession]:
    session = SandboxSession()
    ns = new_namespace(session)
    preload.populate(
        ns, ReplState(session=session, root_loop=ROOT_LOOP), LoadedContext("", "text", "nothing loaded")
    )
    try:
        return ns["rlm_query_batched"](prompts), session
    finally:
        preload.forget(ns)


TAGGED = (
    "tag = context.split()[0]\nprint('before', tag)\nsaid = llm_query('child of ' + tag + ': ' + context)\n"
    "print('after', tag, said)"
)


def test_a_block_waiting_for_a_model_lets_the_others_go_on_and_keeps_its_own_output(
    client_on_server: LLMTestServer,
) -> None:
    """Issue 31: four sub-RLMs whose first block calls llm_query have their four calls in flight at once
    (the gate holds each until calls of all four are there); every block's output is its own."""

    def sub(rec) -> str:  # noqa: ANN001
        if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt:
            turn = rec.prompt.count("Output of turn") + 1
            return repl(TAGGED) if turn == 1 else asking_subs.reply_for("llm_query")(rec)
        return "answer of " + (asking_subs.tag_of(rec) or "?")

    gate = Gate(4, asking_subs.tag_of, sub)
    client_on_server.latency = 0.05
    client_on_server.reply_with(gate)
    answers, session = _batch(asking_subs.prompts(4))
    assert answers == ["3", "4", "5", "6"]
    assert gate.most == 4, gate.most  # one after another would hold one at a time (and wait out the gate)
    children = [r for r in client_on_server.requests if asking_subs.tag_of(r)]
    assert len(children) == 4 and max_overlap(children) == 4
    seconds = [r for r in client_on_server.requests if "Output of turn 1" in r.prompt]
    for i in range(4):
        mine = [r.prompt for r in seconds if f"before p{i}\n" in r.prompt]
        assert len(mine) >= 1, i
        others = [f"before p{j}\n" for j in range(4) if j != i] + [f"after p{j}" for j in range(4) if j != i]
        for prompt in mine:  # its own lines, in order, and nothing another block printed meanwhile
            assert f"before p{i}\nafter p{i} answer of p{i}" in prompt
            assert not [o for o in others if o in prompt], prompt
    # the batch ran as one unit under the session's limits and left no block, timer or task behind
    assert session.active_depth == 0 and not session.cell_thread.in_cell and session.cancelled is None
    gc.collect()
    assert not [t for t in gc.get_objects() if isinstance(t, cooperative.Task) and t]


def test_one_sub_rlm_at_a_time_still_holds_the_others_with_concurrency_one(
    client_on_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate's counter-check: with subrun_concurrency=1 the blocks' calls never overlap."""
    monkeypatch.setenv("RLM_SUBRUN_CONCURRENCY", "1")  # read when the test's session builds its client
    gate = Gate(2, asking_subs.tag_of, asking_subs.reply_for("llm_query"), timeout=0.5)
    client_on_server.reply_with(gate)
    answers, _ = _batch(asking_subs.prompts(2))
    assert answers == ["3", "4"]
    assert gate.most == 1
    children = [r for r in client_on_server.requests if asking_subs.tag_of(r)]
    assert len(children) == 2 and max_overlap(children) == 1


# What model code in a sub-RLM sees when the batch is stopped while its block waits for a model: the
# interrupt itself (no greenlet, hub or frame behind it), no way to switch or import the machinery, and no
# model call it can still send.
STOPPED_PROBE = """tag = context.split()[0]
try:
    said = llm_query('child of ' + tag + ': ' + context)
except BaseException as e:
    print('caught', type(e).__name__, sorted(a for a in dir(e) if not a.startswith('_')))
    for name in ('gr_frame', 'gr_context', 'parent', 'switch', 'throw', 'getcurrent', 'hub', 'waiting',
                 'outcome', 'run', 'dead', 'tb_frame', 'f_back', 'cr_frame', 'gi_frame'):
        try:
            print(name, getattr(e, name, 'absent'))
        except BaseException as refused:
            print(name, 'refused', type(refused).__name__)
    try:
        import greenlet
        print('imported', greenlet)
    except BaseException as refused:
        print('refused', type(refused).__name__)
    try:
        from greenlet import getcurrent
        print('imported', getcurrent)
    except BaseException as refused:
        print('refused', type(refused).__name__)
    try:
        import rlm_kernel.cooperative
        print('imported', rlm_kernel)
    except BaseException as refused:
        print('refused', type(refused).__name__)
    try:
        import gevent
        print('imported', gevent)
    except BaseException as refused:
        print('refused', type(refused).__name__)
    try:
        import asyncio
        print('imported', asyncio)
    except BaseException as refused:
        print('refused', type(refused).__name__)
    try:
        again = llm_query('again ' + tag)
    except BaseException as e2:
        print('again', type(e2).__name__)
    print('swallowed')  # the block goes on; the run's next root call is refused the same way
"""


def test_an_interrupt_stops_every_sub_rlm_at_its_wait_and_model_code_sees_only_the_interrupt(
    client_on_server: LLMTestServer,
) -> None:
    def reply(rec) -> object:  # noqa: ANN001
        if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt:
            return repl(STOPPED_PROBE)
        return Reply("too late", delay=30.0)

    client_on_server.reply_with(reply)

    def interrupt_when_all_wait() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if len([r for r in client_on_server.requests if asking_subs.tag_of(r)]) >= 4:
                os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt in the main thread, as a kernel's
                return
            time.sleep(0.05)

    session = SandboxSession()
    ns = new_namespace(session)
    state = ReplState(session=session, root_loop=ROOT_LOOP, run=RunTracker())
    preload.populate(ns, state, LoadedContext("", "text", "nothing loaded"))
    threading.Thread(target=interrupt_when_all_wait, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        ns["rlm_query_batched"](asking_subs.prompts(4))
    preload.forget(ns)
    deadline = time.monotonic() + 10
    while client_on_server.in_flight and time.monotonic() < deadline:  # the client hung up on every call
        time.sleep(0.05)
    assert client_on_server.in_flight == 0
    assert not [r for r in client_on_server.requests if "again p" in r.prompt]  # nothing sent while stopping
    calls = state.run.calls  # the stopped sub-RLMs are kept, each with its partial run
    assert [c.kind for c in calls] == ["rlm_query"] * 4 and not any(c.ok for c in calls)
    for call in calls:
        out = call.run["turns"][0]["stdout"]
        assert "caught KeyboardInterrupt ['add_note', 'args', 'with_traceback']" in out, out
        probes = out.splitlines()[1:16]  # each attribute absent, or refused by the sandbox
        assert all(p.endswith((" absent", " refused SandboxError")) for p in probes), out
        assert "imported" not in out and out.count("\nrefused ") == 5, out
        assert "again KeyboardInterrupt" in out, out
    assert session.active_depth == 0 and not session.cell_thread.in_cell
    gc.collect()
    assert not [t for t in gc.get_objects() if isinstance(t, cooperative.Task) and t]


def test_nested_batches_in_two_sub_rlms_overlap_their_calls_through_the_outer_batch(
    client_on_server: LLMTestServer,
) -> None:
    """Each of two sub-RLMs runs its own rlm_query_batched of two (a hub inside a task): the four nested
    sub-RLMs' blocks have their llm_query calls in flight at once."""
    key = re.compile(r"child of (np\d[ab]):")

    def reply(rec) -> str:  # noqa: ANN001
        if ROOT_MARK in rec.prompt and SUB_MARK in rec.prompt:
            turn = rec.prompt.count("Output of turn") + 1
            if "<<<\nnested " in rec.prompt:  # a nested sub-RLM
                first = "tag = context.split()[1]\nsaid = llm_query('child of ' + tag + ': ' + context)"
                return [repl(first), repl("m = len(context.split())\nprint(m)"), repl("FINAL(m)")][turn - 1]
            first = (
                "tag = context.split()[0]\n"
                "res = rlm_query_batched(['nested n' + tag + 'a w w', 'nested n' + tag + 'b w w w'])\n"
                "print(res)"
            )
            count = repl("n = len(context.split())\nprint(n)")
            return [repl(first), count, repl("FINAL(n)")][min(turn, 3) - 1]
        return "ok"

    gate = Gate(4, lambda rec: m.group(1) if (m := key.search(rec.prompt)) else None, reply)
    client_on_server.reply_with(gate)
    answers, session = _batch(asking_subs.prompts(2))
    assert answers == ["3", "4"]
    assert gate.most == 4, gate.most
    nested_children = [r for r in client_on_server.requests if key.search(r.prompt)]
    assert len(nested_children) == 4 and max_overlap(nested_children) == 4
    assert session.active_depth == 0 and not session.cell_thread.in_cell


def test_a_time_limit_firing_in_the_batchs_bookkeeping_only_cancels() -> None:
    """The hub switches output captures around every switch and stops every task on the way out, with the
    cell's frames below it. A sticky time limit that fires there (here: inside the capture swap) must not
    raise part-way — the task's capture would not be put back, and a stop cut short leaves tasks suspended
    for the garbage collector to finish outside the cell. It only cancels; the batch's own check raises."""
    import concurrent.futures

    import rlm_kernel.rootloop.subruns  # noqa: F401 - registers the batch's bookkeeping as uninterruptible
    from rlm_kernel.sandbox.filenames import register_sandboxed_filename
    from rlm_kernel.sandbox.limits import Limits, cell_limits

    session = SandboxSession(Limits(cpu_seconds=5, wall_seconds=60, cpu_backstop_seconds=0, memory_mb=0))
    swaps: list[object] = []
    fire = [False]

    def swap(state: object) -> object:
        swaps.append(state)
        if fire[0]:
            signal.raise_signal(signal.SIGPROF)  # the timer, between the switch and the swap back
        return f"capture {len(swaps)}"

    future: concurrent.futures.Future = concurrent.futures.Future()
    hub = cooperative.Hub(swap)

    def task() -> str:
        cooperative.wait_any([future], None)
        return "done"

    code = compile("def below(run):\n    return run()\n", "<rlm turn 7>", "exec")
    register_sandboxed_filename("<rlm turn 7>")
    space: dict = {}
    exec(code, space)  # noqa: S102 - a frame with a sandboxed file name, as a block calling the batch

    def batch() -> list:
        hub.spawn(task, 0)
        fire[0] = True
        future.set_result(1)
        hub.resume(hub.tasks[0])  # the swap fires the timer: no CellTimeout from inside the hub
        return hub.finished()

    with cell_limits(session):
        ended = space["below"](batch)
        assert session.cancelled is not None and "cpu time limit of 5 s" in session.cancelled  # it fired
    assert [t.outcome for t in ended] == [("done", None)]
    assert len(swaps) == 4 and swaps[2] == "capture 2"  # the task's capture was swapped back in and out
