"""Cooperative tasks (rlm_kernel.cooperative): they switch only where they wait, each keeps its own state and
context, a nested hub waits through the outer one, and `stop` unwinds every task before it returns."""

from __future__ import annotations

import concurrent.futures
import contextvars
import threading

import pytest

from rlm_kernel import cooperative

Future = concurrent.futures.Future


def later(fut: Future, value: object, seconds: float = 0.05) -> None:
    """Answer `fut` from another thread after `seconds`, as the LLM loop answers a call."""
    threading.Timer(seconds, fut.set_result, (value,)).start()


def drive(hub: cooperative.Hub) -> None:
    """The smallest hub loop: resume the tasks whose futures are done until none is left."""
    while hub.tasks:
        for task in hub.ready(0.05):
            hub.resume(task)
        hub.finished()


def wait_for(fut: Future) -> object:
    while not fut.done():
        cooperative.wait_any((fut,), None)
    return fut.result()


def test_outside_a_task_wait_any_is_a_plain_wait() -> None:
    assert not cooperative.in_task()
    pending, done = Future(), Future()
    done.set_result(1)
    assert cooperative.wait_any([pending], 0.01) == set()
    assert cooperative.wait_any([pending, done], 1.0) == {done}
    cooperative.check_stopping()  # no hub: nothing to refuse


def test_tasks_switch_only_where_they_wait() -> None:
    log: list[str] = []
    futures = {name: Future() for name in "ab"}

    def work(name: str, seconds: float) -> str:
        log.append(f"{name} starts")
        later(futures[name], name.upper(), seconds)
        got = wait_for(futures[name])
        log.append(f"{name} got {got}")
        return f"{name} done"

    def no_wait() -> str:
        log.extend(["c runs", "c ends"])
        return "c done"

    hub = cooperative.Hub()
    tasks = [hub.spawn(lambda: work("a", 0.3), 0), hub.spawn(lambda: work("b", 0.05), 1)]
    tasks.append(hub.spawn(no_wait, 2))
    assert log == ["a starts", "b starts", "c runs", "c ends"]  # each ran to its wait (or its end) in turn
    drive(hub)
    assert log[4:] == ["b got B", "a got A"]  # whichever call answered first went on first
    assert [t.outcome for t in tasks] == [("a done", None), ("b done", None), ("c done", None)]
    assert all(t.dead for t in tasks)


def test_each_task_has_its_own_context_and_state() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="hub")
    current = ["hub state"]

    def swap(state: object) -> object:
        before, current[0] = current[0], state if state is not None else "fresh"
        return before

    def work(name: str) -> tuple[str, str, str]:
        var.set(name)
        current[0] = f"{name} state"
        fut: Future = Future()
        later(fut, None)
        wait_for(fut)  # the other task runs meanwhile and sets its own
        return var.get(), current[0], name

    hub = cooperative.Hub(swap)
    tasks = [hub.spawn(lambda n=n: work(n), i) for i, n in enumerate(["a", "b"])]
    drive(hub)
    assert [t.outcome for t in tasks] == [(("a", "a state", "a"), None), (("b", "b state", "b"), None)]
    assert var.get() == "hub" and current[0] == "hub state"


def test_a_nested_hub_waits_through_the_outer_one() -> None:
    log: list[str] = []

    def leaf(name: str, seconds: float) -> str:
        fut: Future = Future()
        later(fut, name, seconds)
        wait_for(fut)
        log.append(name)
        return name

    def nested() -> list[object]:
        inner = cooperative.Hub()
        tasks = [inner.spawn(lambda: leaf("inner-slow", 0.4), 0), inner.spawn(lambda: leaf("inner", 0.1), 1)]
        drive(inner)  # its wait goes to the outer hub: the outer task below goes on meanwhile
        return [t.outcome[0] for t in tasks]

    outer = cooperative.Hub()
    first = outer.spawn(nested, 0)
    second = outer.spawn(lambda: leaf("outer", 0.2), 1)
    drive(outer)
    assert log == ["inner", "outer", "inner-slow"]
    assert first.outcome == (["inner-slow", "inner"], None) and second.outcome == ("outer", None)


def test_stop_unwinds_every_task_and_a_wait_while_stopping_raises_at_once() -> None:
    seen: list[str] = []
    never: list[Future] = [Future() for _ in range(3)]

    def stubborn(i: int) -> str:
        try:
            wait_for(never[i])
        except KeyboardInterrupt:
            seen.append(f"{i} interrupted")
            try:
                wait_for(Future())  # waiting again while the hub stops: raised at once
            except KeyboardInterrupt:
                seen.append(f"{i} again")
            try:
                cooperative.check_stopping()  # what the LLM client asks before it sends a call
            except KeyboardInterrupt:
                seen.append(f"{i} sends nothing")
            raise
        return "unreachable"

    hub = cooperative.Hub()
    tasks = [hub.spawn(lambda i=i: stubborn(i), i) for i in range(3)]
    assert hub.stop(KeyboardInterrupt) == tasks  # each with its outcome
    assert seen == [f"{i} {what}" for i in range(3) for what in ("interrupted", "again", "sends nothing")]
    assert all(t.dead for t in tasks) and not hub.tasks
    assert all(isinstance(t.outcome[1], KeyboardInterrupt) for t in tasks)
    assert all(f.cancelled() for f in never)  # the calls they waited on were cancelled first


def test_a_task_that_raises_ends_with_its_error_and_the_hub_goes_on() -> None:
    def broken() -> None:
        raise ValueError("bad item")

    hub = cooperative.Hub()
    task = hub.spawn(broken, 0)
    assert task.dead and isinstance(task.outcome[1], ValueError)
    assert hub.finished() == [task] and not hub.tasks


def test_a_wait_for_nothing_does_not_switch() -> None:
    hub = cooperative.Hub()
    task = hub.spawn(lambda: cooperative.wait_any((), None), 0)
    assert task.dead and task.outcome == (set(), None)  # nothing to wait for: no switch


@pytest.mark.parametrize("error", [KeyboardInterrupt, lambda: ValueError("stopped")])
def test_stop_with_a_task_never_started_runs_none_of_it(error) -> None:  # noqa: ANN001
    ran: list[int] = []
    hub = cooperative.Hub()
    hub.tasks.append(cooperative.Task(hub, lambda: ran.append(1), 0, None))  # made, never switched to
    assert hub.stop(error) == []
    assert ran == [] and not hub.tasks
