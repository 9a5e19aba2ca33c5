"""What one switch between sub-RLMs costs, by way of switching on one thread (issue 31's comparison).

`python -m benchmarks.cooperative_switch` prints the round-trip time (wait point → scheduler → back) of:

- greenlet (what `rlm_kernel.cooperative` uses): a task switches to its hub and is switched back;
- a generator: the scheduler `send`s into it, it `yield`s back — what running blocks as generators costs;
- an asyncio task on the same thread awaiting a future the loop resolves (`call_soon`);
- two threads handing off through `threading.Event` (excluded by the threat model — cell code must stay on
  the cell's thread — and shown only for scale).

Every figure is microseconds against a model call of 50-2000 ms: none of them decides. What decides is
where each way can suspend. A greenlet suspends at the wait inside `llm_query`, however deep the block's
own code called it — inside its functions, comprehensions, lambdas, `map(ask, parts)`, `sorted(key=...)`.
A generator or a coroutine suspends only in its own frame: the block, every function of it on the way to the
call and every call site would have to become `yield from` / `await` (a rewrite of the model's code that
changes what its functions return), and no C-level caller (`map`, `sorted`, `str.join` over a generator)
can pass a suspension through. asyncio would also put Tasks, loops and `cr_frame`s next to cell code —
exactly the objects the sandbox keeps out of reach — and the cell already runs inside ipykernel's loop.
"""

from __future__ import annotations

import asyncio
import threading
import time

from greenlet import getcurrent, greenlet

N = 200_000


def _greenlet() -> float:
    hub = getcurrent()

    def task() -> None:
        while True:
            hub.switch()

    g = greenlet(task)
    g.switch()
    t0 = time.perf_counter()
    for _ in range(N):
        g.switch()
    return (time.perf_counter() - t0) / N


def _generator() -> float:
    def task():  # noqa: ANN202
        while True:
            yield

    g = task()
    next(g)
    t0 = time.perf_counter()
    for _ in range(N):
        g.send(None)
    return (time.perf_counter() - t0) / N


def _asyncio() -> float:
    n = N // 10

    async def main() -> float:
        loop = asyncio.get_running_loop()
        t0 = time.perf_counter()
        for _ in range(n):
            fut = loop.create_future()
            loop.call_soon(fut.set_result, None)
            await fut
        return (time.perf_counter() - t0) / n

    return asyncio.run(main())


def _threads() -> float:
    n = N // 20
    ping, pong = threading.Event(), threading.Event()

    def other() -> None:
        for _ in range(n):
            ping.wait()
            ping.clear()
            pong.set()

    t = threading.Thread(target=other)
    t.start()
    t0 = time.perf_counter()
    for _ in range(n):
        ping.set()
        pong.wait()
        pong.clear()
    took = (time.perf_counter() - t0) / n
    t.join()
    return took


def main() -> None:
    for name, fn in [
        ("greenlet switch (task -> hub -> task)", _greenlet),
        ("generator send/yield", _generator),
        ("asyncio await of a future resolved by the loop", _asyncio),
        ("two threads, Event hand-off (not allowed: cell code must stay on its thread)", _threads),
    ]:
        best = min(fn() for _ in range(3))
        print(f"{best * 1e6:8.2f} µs  {name}")


if __name__ == "__main__":
    main()
