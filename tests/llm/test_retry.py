"""Retries over real HTTP: only retryable faults, with the delay the server asked for, shared cool-down."""

from __future__ import annotations

import email.utils
import socket
import time
from pathlib import Path

import pytest

from rlm_kernel.llm import LLMError, ProviderError
from rlm_kernel.llm.client import LLMClient
from rlm_kernel.llm.config import load_config
from rlm_kernel.llm.retry import backoff_delay, is_retryable_status, server_delay
from tests.llm.conftest import MakeClient
from tests.llm_server import Fault, LLMTestServer


def _gap(server: LLMTestServer, i: int = 1) -> float:
    reqs = server.requests
    return reqs[i].time - reqs[i - 1].time


def test_429_retry_after_ms_is_honoured(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.queue(Fault.rate_limited(retry_after_ms=300))
    assert make_client().complete("hello").text == "hello"
    assert len(llm_server.requests) == 2
    assert 0.29 <= _gap(llm_server) < 3.0  # not read as 300 s; the ceiling leaves 10× for a busy machine


def test_429_retry_after_seconds(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.queue(Fault.rate_limited(retry_after="1"))
    assert make_client().complete("hello").text == "hello"
    assert 0.99 <= _gap(llm_server) < 5.0  # generous: a busy machine only delays the retry


def test_429_retry_after_http_date(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    # an HTTP date has whole seconds: the client waits until that moment, however late the first reply came
    due = int(time.time()) + 3
    llm_server.queue(Fault.rate_limited(retry_after=email.utils.formatdate(due, usegmt=True)))
    make_client().complete("hello")
    first, second = llm_server.requests[0].time, llm_server.requests[1].time
    assert second >= due - 0.1, f"retried {due - second:.2f} s before the date the server named"
    assert second - first < 3.5 + 5.0  # no long extra wait (generous for a busy machine)


def test_retry_after_is_capped(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.queue(Fault.rate_limited(retry_after="30"))
    make_client(retry_after_cap=0.2).complete("hello")
    assert 0.19 <= _gap(llm_server) < 5.0  # capped: far below the 30 s asked (10×+ margin for a busy machine)


@pytest.mark.parametrize(
    "fault",
    [Fault.http(500), Fault.http(503), Fault.http(408), Fault.http(409), Fault.reset(), Fault.timeout(30)],
)
def test_retryable_faults_are_survived(
    fault: Fault, make_client: MakeClient, llm_server: LLMTestServer
) -> None:
    llm_server.queue(fault)
    # the timeout must end the 30 s hang but never a normal local reply (a 0.5 s one did, under load)
    out = make_client(timeout=2.0).complete("survive this")
    assert out.text == "survive this"
    assert len(llm_server.requests) == 2


def test_max_retries_then_clear_error(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.queue(*[Fault.http(503)] * 5)
    with pytest.raises(ProviderError, match=r"HTTP 503.*after 3 attempts") as info:
        make_client(max_retries=2).complete("x")
    assert info.value.status == 503
    assert len(llm_server.requests) == 3


def test_zero_retries(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.queue(Fault.http(500))
    with pytest.raises(ProviderError):
        make_client(max_retries=0).complete("x")
    assert len(llm_server.requests) == 1


def test_x_should_retry_false_overrides(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.queue(Fault.http(503, {"x-should-retry": "false"}))
    with pytest.raises(ProviderError):
        make_client().complete("x")
    assert len(llm_server.requests) == 1


def test_connection_refused_is_retried_then_reported(
    make_client: MakeClient, llm_server: LLMTestServer
) -> None:
    client = make_client(max_retries=1)
    llm_server.stop()
    t0 = time.monotonic()
    with pytest.raises(ProviderError, match="connection to openai at .* failed") as info:
        client.complete("x")
    assert info.value.retryable and time.monotonic() - t0 < 5


def test_one_429_cools_down_the_whole_batch(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.latency = 0.02
    llm_server.queue(Fault.rate_limited(retry_after_ms=500))
    out = make_client().complete_batch([f"p{i}" for i in range(8)], concurrency=2)
    assert [c.text for c in out] == [f"p{i}" for i in range(8)]
    reqs = llm_server.requests
    rate_limited_at = reqs[0].time
    # the two first requests were already in flight; every later one waited for the shared cool-down
    later = [r.time for r in reqs[2:]]
    assert len(reqs) == 9 and min(later) >= rate_limited_at + 0.5


def test_policy_helpers() -> None:
    assert all(is_retryable_status(s) for s in (408, 409, 429, 500, 502, 503, 504))
    assert not any(is_retryable_status(s) for s in (400, 401, 403, 404, 422))
    assert server_delay({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert server_delay({"retry-after": "3"}) == 3.0
    assert server_delay({}) is None
    delays = [backoff_delay(n) for n in range(8)]
    assert 0.375 <= delays[0] <= 0.5 and all(d <= 8.0 for d in delays) and delays[7] >= 6.0


def test_a_trickling_body_cannot_hold_a_call_past_its_deadline(
    make_client: MakeClient, llm_server: LLMTestServer
) -> None:
    llm_server.queue(Fault.trickle(seconds=30))
    client = make_client(timeout=2, connect_timeout=1, max_retries=0)
    t0 = time.monotonic()
    with pytest.raises(LLMError, match="did not answer in time"):
        client.complete("slowly")
    assert time.monotonic() - t0 < 10  # one attempt's total deadline is 3 s; the body would take 30 s


def _error_text(tmp_path: Path, base_url: str, max_retries: int) -> str:
    """The error text of one call to `base_url` (no cache, no settings from the environment)."""
    config = load_config(
        environ={},
        use_settings=False,
        provider="openai",
        base_url=base_url,
        model="m",
        api_key="sk-test",
        cache="off",
        cache_dir=str(tmp_path),
        max_retries=max_retries,
    )
    client = LLMClient(config)
    try:
        with pytest.raises(LLMError) as info:
            client.complete("hello")
    finally:
        client.close()
    return str(info.value)


def test_a_refused_connection_names_the_url_and_no_timeout_advice(tmp_path: Path) -> None:
    """Nothing listens at the base URL: the error says so, with the URL; a longer timeout would not help."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again on leaving: nothing listens there
    text = _error_text(tmp_path, f"http://127.0.0.1:{port}/v1", max_retries=0)
    assert f"127.0.0.1:{port}" in text and "nothing answered at that address" in text, text
    assert "RLM_TIMEOUT" not in text, text


def test_a_name_that_does_not_resolve_is_reported_as_such(tmp_path: Path) -> None:
    # `.invalid` never resolves (RFC 6761): the resolver fails without any server being asked
    text = _error_text(tmp_path, "http://no-such-host.invalid/v1", max_retries=3)
    assert "no-such-host.invalid" in text and "could not be resolved" in text, text
    assert "RLM_TIMEOUT" not in text and "nothing answered" not in text and "attempts" not in text, text


def test_a_timeout_suggests_raising_the_timeout(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    llm_server.queue(Fault.trickle(seconds=30))
    with pytest.raises(LLMError) as info:
        make_client(timeout=1, connect_timeout=1, max_retries=0).complete("slowly")
    assert "did not answer in time" in str(info.value) and "RLM_TIMEOUT" in str(info.value)
