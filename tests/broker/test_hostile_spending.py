"""A call the broker sent is paid for, however the kernel ends it: with the sandbox policy off (a full escape
inside the kernel process), raw Python cancels batches once their requests are out, closes the broker's socket
mid-call, asks the supervisor for a new broker mid-call, and sets timeouts so short that no answer ever
arrives — and the start-time `RLM_BUDGET_MAX_CALLS` still bounds what reaches the provider."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker.test_hostile_kernel import _kernel
from tests.confine.test_os_layer import REASON
from tests.kernel_client import ok
from tests.llm_server import LLMTestServer

pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

# Attacker's helpers on top of test_hostile_kernel.FORGE: start a batch, let its requests leave, end it.
ENDS = """
import time as _t
from rlm_kernel.llm import event_loop as _el

def sent_then(end, n=3, wait=1.5, **over):
    for _try in range(20):  # a broker the last round ended may still be replaced
        try:
            eid = engine(**over)
            break
        except Exception:
            _t.sleep(0.5)
    frames = []
    req = ChatRequest(model="m", messages=({"role": "user", "content": "paid"},), max_tokens=8)
    fut = _el.submit(link.batch(eid, [req] * n, chain("paid-" + str(_t.monotonic())), n, frames.append))
    _t.sleep(wait)  # the requests are at the provider now (it holds them: latency)
    end(fut)
    try:
        fut.result(30)
    except BaseException:
        pass
    return sum(1 for f in frames if f.get("event") == "start")

def cancel(fut):
    _el.cancel(fut)

def new_broker(fut):
    import socket as _s
    link._control.send(b"s")  # the supervisor ends the live broker (SIGKILL) and forks another
    _data, fds, _f, _a = _s.recv_fds(link._control, 64, 1)  # its answer (the link would read it late)
    for fd in fds:
        __import__("os").close(fd)
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer() as s:
        yield s


@pytest.fixture(autouse=True)
def _fresh(server: LLMTestServer) -> None:
    server.reset()


def _waited(server: LLMTestServer, at_least: int, seconds: float = 20.0) -> int:
    deadline = time.monotonic() + seconds
    while len(server.requests) < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(server.requests)


@pytest.mark.parametrize("end", ["cancel", "drop_broker", "new_broker"])
def test_a_call_ended_after_it_was_sent_is_paid_for(server: LLMTestServer, tmp_path: Path, end: str) -> None:
    kernel = _kernel(server, tmp_path, RLM_BUDGET_MAX_CALLS="3")
    try:
        ok(kernel, ENDS)
        server.latency = 3.0
        ending = "lambda fut: drop_broker()" if end == "drop_broker" else end
        started = []
        for _ in range(4):  # each round: 3 requests out, then the kernel ends them before the answers
            started.append(ok(kernel, f"print(sent_then({ending}))", timeout=120).stdout.strip())
        server.latency = 0.0
        assert started[0] == "3", started  # the first round's calls were sent
        # however the kernel ended them, the calls that reached the provider count against the limit
        assert len(server.requests) <= 3, (end, len(server.requests), started)
        for _ in range(10):  # after many new brokers the supervisor's rate limit may hold the next one back
            refused = kernel.execute("llm_query('honest after')")
            if "supervisor refused" not in refused.all_text:
                break
            time.sleep(2.5)
        assert not refused.ok and "max_calls" in refused.all_text, refused
        assert len(server.requests) <= 3
    finally:
        kernel.shutdown()


def test_attempts_that_time_out_are_paid_for(server: LLMTestServer, tmp_path: Path) -> None:
    kernel = _kernel(server, tmp_path, RLM_BUDGET_MAX_CALLS="3")
    try:
        ok(kernel, ENDS)
        server.latency = 2.0
        # a timeout far below the provider's latency, and retries: every attempt is sent, none answered
        short = (
            "frames = []\n"
            "eid = engine(timeout=0.05, connect_timeout=1.0, max_retries=5, retry_after_cap=0.0)\n"
            "req = ChatRequest(model='m', messages=({'role': 'user', 'content': 'short'},), max_tokens=8)\n"
            "_el.submit(link.batch(eid, [req] * 3, chain('t-' + str(_t.monotonic())), 3, frames.append))"
            ".result(170)\n"
        )
        for _ in range(2):
            ok(kernel, short, timeout=180)
        server.latency = 0.0
        assert len(server.requests) <= 3, len(server.requests)
    finally:
        kernel.shutdown()


def test_a_usd_limit_is_not_passed_by_a_model_without_a_price(server: LLMTestServer, tmp_path: Path) -> None:
    """Under a start-time USD limit, a model the price table does not know (a name the kernel chose, priced by
    the kernel at 0) would cost nothing to the budget: the broker refuses it."""
    kernel = _kernel(server, tmp_path, RLM_BUDGET_MAX_USD="0.01")
    try:
        call = (
            "frames = []\n"
            "msgs = ({{'role': 'user', 'content': 'x'}},)\n"
            "req = ChatRequest(model={model!r}, messages=msgs, max_tokens=1000)\n"
            "_el.submit(link.batch(engine(prices={prices}), [req] * 5, chain('usd'), 5, frames.append))"
            ".result(60)\n"
            "print([f['error']['message'][:160] for f in frames if 'item' in f and 'error' in f])\n"
        )
        ok(kernel, ENDS)
        out = ok(
            kernel, call.format(model="unpriced-model-xyz", prices="{'unpriced-model-xyz': [0, 0]}")
        ).stdout
        assert "no price is known" in out, out
        assert server.requests == []
        # honest control: a model with a price is counted against the limit (10 calls of 1000 output tokens
        # at gpt-4o-mini's price stay under a cent)
        out = ok(kernel, call.format(model="gpt-4o-mini", prices="{}")).stdout
        assert len(server.requests) == 5, out
    finally:
        kernel.shutdown()
