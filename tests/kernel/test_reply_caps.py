"""Every reply channel is capped at the output cap, through a real kernel (issue 26, class 4).

inspect_request (Shift-Tab), the `??` pager payload of execute_reply, complete_reply, user_expressions and
display updates of one cell: a 30 MB string or a class with thousands of long attribute names cannot make the
kernel send megabytes; honest small replies are unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from rlm_kernel.cell_output import RLMDisplayPublisher
from tests.kernel_client import KernelHarness

CAP = 100_000  # RLM_OUTPUT_BYTES for this kernel


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelHarness]:
    harness = KernelHarness(env={"RLM_OUTPUT_BYTES": str(CAP), "RLM_CPU_SECONDS": "20"})
    ex = harness.execute(
        "big = 'x' * (3 * 10**7)\n"
        "class Wide:\n    pass\n"
        "for i in range(5000):\n    setattr(Wide, 'attr%d_' % i + 'y' * 150, i)\n"
        "small = 'hello'",
        timeout=120,
    )
    assert ex.ok, str(ex)
    try:
        yield harness
    finally:
        harness.shutdown()


def _size(value: object) -> int:
    return len(json.dumps(value, default=str))


@pytest.mark.parametrize("detail", [0, 1])
def test_inspect_reply_is_capped(kernel: KernelHarness, detail: int) -> None:
    reply = kernel.inspect("big", detail_level=detail)
    assert reply["status"] == "ok" and reply["found"], reply.get("evalue")
    assert _size(reply["data"]) < 3 * CAP, _size(reply["data"])
    assert kernel.execute("len(big)").result == str(3 * 10**7)


def test_inspect_of_a_small_value_is_whole(kernel: KernelHarness) -> None:
    reply = kernel.inspect("small")
    assert "hello" in reply["data"]["text/plain"] and "truncated" not in reply["data"]["text/plain"]


@pytest.mark.parametrize("code", ["big??", "big?", "Wide??"])
def test_pager_payload_is_capped(kernel: KernelHarness, code: str) -> None:
    ex = kernel.execute(code, timeout=60)
    assert ex.ok, str(ex)
    assert _size(ex.reply.get("payload", [])) < 3 * CAP
    assert _size(ex.display) + len(ex.stdout) < 3 * CAP


def test_complete_reply_is_capped(kernel: KernelHarness) -> None:
    reply = kernel.complete("Wide.a")
    assert reply["status"] == "ok"
    assert 0 < len(reply["matches"]) <= 1000
    assert _size(reply) < 2 * CAP


def test_complete_of_few_names_is_whole(kernel: KernelHarness) -> None:
    assert "small" in kernel.complete("sma")["matches"]


def test_user_expressions_are_capped(kernel: KernelHarness) -> None:
    ex = kernel.execute("None", user_expressions={"probe": "big"})
    assert ex.user_expressions["probe"]["status"] == "ok"
    assert _size(ex.user_expressions) < 2 * CAP


def test_display_update_traffic_is_capped(kernel: KernelHarness) -> None:
    """Live-display updates send at most UPDATE_TRAFFIC_FACTOR x the cap in one cell (the rest dropped)."""
    code = "h = display('a', display_id=True)\nfor k in range(400):\n    h.update(str(k % 10) * 50_000)\n"
    ex = kernel.execute(code, timeout=120)
    assert ex.ok, str(ex)
    sent = sum(_size(d) for d in ex.display)
    assert sent <= (RLMDisplayPublisher.UPDATE_TRAFFIC_FACTOR + 1) * CAP, sent
    assert RLMDisplayPublisher.UPDATE_TRAFFIC_FACTOR <= 5
    assert kernel.execute("small").result == "'hello'"
