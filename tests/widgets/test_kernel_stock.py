"""Widgets inside a real kernel process (stock ipykernel + the real LLM client + the local test server).

Checks the comm messages of the fan-out widget, the final text summary, and routing from background threads.
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kernel_client import KernelHarness
from tests.llm_server import LLMTestServer

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

SETUP = """
import rlm_kernel.widgets.widget_magics as _m
_m.install()
from rlm_kernel.llm import get_client
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    srv = LLMTestServer(mode="count")
    srv.start()
    yield srv
    srv.stop()


def kernel_env(server: LLMTestServer, display: str) -> dict[str, str]:
    return {
        "RLM_PROVIDER": "openai",
        "RLM_BASE_URL": server.openai_base_url,
        "RLM_API_KEY": "sk-test-not-a-key",
        "RLM_CACHE": "off",
        "RLM_MODEL": "test-model",
        "RLM_DISPLAY": display,
    }


def comm_state_values(messages: list[dict], key: str) -> list:
    """Values a widget trait took, across comm_open states and comm_msg updates, in order."""
    out = []
    for m in messages:
        if m["msg_type"] in ("comm_open", "comm_msg"):
            state = m["content"].get("data", {}).get("state", {})
            if key in state:
                out.append(state[key])
    return out


@pytest.fixture(scope="module")
def widgets_kernel(server: LLMTestServer) -> Iterator[KernelHarness]:
    with KernelHarness(kernel_name="python3", env=kernel_env(server, "widgets")) as k:
        assert k.execute(SETUP, timeout=60).ok
        yield k


def test_fanout_widget_comms_and_summary(widgets_kernel: KernelHarness) -> None:
    r = widgets_kernel.execute(
        "out = get_client().complete_batch(['one two three'] * 30, max_tokens=5, concurrency=8); len(out)",
        timeout=60,
    )
    assert r.ok, r
    assert r.result == "30"
    # the fan-out widget was displayed in this cell …
    views = [d for d in r.display if WIDGET_VIEW in d and d not in display_summaries(r, whole=True)]
    assert len(views) == 1
    assert views[0]["text/plain"] == "[fan-out widget: 30 calls]"  # what a frontend without widgets shows
    # … its models were opened and updated over comms in this cell, ending at 30/30 with a success bar
    opened = [m for m in r.messages if m["msg_type"] == "comm_open"]
    assert any(m["content"]["data"]["state"].get("_model_name") == "IntProgressModel" for m in opened)
    values = comm_state_values(r.messages, "value")
    assert 30 in values
    assert "success" in comm_state_values(r.messages, "bar_style")
    assert any("30/30" in str(v) for v in values)
    # … and the one-line summary became the widget display's text form, not a second line under the widget
    assert "fan-out" not in r.stdout
    summary = display_summaries(r)
    assert len(summary) == 1, r.display
    assert summary[0].startswith("fan-out: 30/30 done · 0 failed · 0 cached · 90 in / ")
    assert "took " in summary[0]


def test_updates_are_coalesced_in_the_kernel(widgets_kernel: KernelHarness, server: LLMTestServer) -> None:
    r = widgets_kernel.execute(
        "out = get_client().complete_batch(['w'] * 1000, max_tokens=2, concurrency=64); len(out)", timeout=120
    )
    assert r.ok, r
    assert r.result == "1000"
    bars = {
        m["content"]["comm_id"]
        for m in r.messages
        if m["msg_type"] == "comm_open"
        and m["content"]["data"]["state"].get("_model_name") == "IntProgressModel"
    }
    assert len(bars) == 1
    updates = [
        m
        for m in r.messages
        if m["msg_type"] == "comm_msg"
        and m["content"]["comm_id"] in bars
        and "value" in m["content"]["data"].get("state", {})
    ]
    t0 = min(m["header"]["date"] for m in r.messages).timestamp()
    t1 = max(m["header"]["date"] for m in r.messages).timestamp()
    seconds = max(t1 - t0, 0.1)
    # one progress-bar update per flush: at most 10 per second (+ the final one), never one per call
    assert len(updates) <= seconds * 10 + 2, (len(updates), seconds)
    assert updates[-1]["content"]["data"]["state"]["value"] == 1000
    assert len(updates) >= 2  # and it moved while running, not only at the end


def test_budget_widget_via_display(widgets_kernel: KernelHarness) -> None:
    r = widgets_kernel.execute(
        "from rlm_kernel.widgets.budget import BudgetDisplay\nBudgetDisplay()", timeout=30
    )
    assert r.ok, r
    assert WIDGET_VIEW in (r.result_data or {})
    assert r.result.startswith("budget: ")
    assert "cache hits" in r.result


def test_a_budget_object_displays_as_its_widget(widgets_kernel: KernelHarness) -> None:
    """`display(get_session_budget())`: `Budget._repr_mimebundle_` gives the live widget and its text line."""
    r = widgets_kernel.execute(
        "from rlm_kernel.llm import get_session_budget\ndisplay(get_session_budget())", timeout=30
    )
    assert r.ok, r
    assert len(r.display) == 1 and WIDGET_VIEW in r.display[0], r.display
    assert r.display[0]["text/plain"].startswith("budget: ") and "cache hits" in r.display[0]["text/plain"]


def test_text_mode_writes_only_the_summary(server: LLMTestServer) -> None:
    with KernelHarness(kernel_name="python3", env=kernel_env(server, "")) as k:  # auto: no widget frontend
        assert k.execute(SETUP, timeout=60).ok
        r = k.execute("out = get_client().complete_batch(['a b'] * 12, max_tokens=3); len(out)", timeout=60)
        assert r.ok, r
        assert not any(m["msg_type"] == "comm_open" for m in r.messages)
        assert r.display == []
        assert r.stdout.startswith(
            "fan-out: 12/12 done · 0 failed · 0 cached · 24 in / 12 out tokens · $0.0000 · took "
        )
        r = k.execute("from rlm_kernel.widgets.display_mode import resolve_mode\nresolve_mode()", timeout=30)
        assert r.result == "('text', 'auto: no widget frontend connected')"


def test_background_batch_reports_to_its_starting_cell(
    widgets_kernel: KernelHarness, server: LLMTestServer
) -> None:
    """A batch started by cell A on its own thread ends while cell B runs: A gets the summary, B nothing."""
    code_a = (
        "import threading, time\n"
        "job = lambda: get_client().complete_batch(['x y'] * 6, max_tokens=2, concurrency=1)\n"
        "t = threading.Thread(target=job)\n"
        "t.start(); time.sleep(0.3)"
    )
    server.latency = 0.3
    try:
        a = widgets_kernel.execute(code_a, timeout=30)
        assert a.ok, a
        a_id = a.messages[0]["parent_header"]["msg_id"]
        b_id = widgets_kernel.kc.execute("import time; time.sleep(3); 'b done'")
        by_parent: dict[str, list[dict]] = {a_id: [], b_id: []}
        deadline = time.monotonic() + 30
        b_idle = False
        while time.monotonic() < deadline and not (b_idle and any_summary(by_parent[a_id])):
            try:
                msg = widgets_kernel.kc.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                continue
            pid = msg["parent_header"].get("msg_id")
            if pid in by_parent:
                by_parent[pid].append(msg)
            if pid == b_id and msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                b_idle = True
        widgets_kernel._shell_reply(b_id, 10)
    finally:
        server.latency = 0.0
    assert any_summary(by_parent[a_id]), json.dumps([m["content"] for m in by_parent[a_id]])[:2000]
    assert not any_summary(by_parent[b_id])
    assert not any(m["msg_type"] in ("display_data", "update_display_data") for m in by_parent[b_id])


def any_summary(messages: list[dict]) -> bool:
    """The summary reached these messages: as a line (text mode) or as the widget display's text form."""
    return any(
        (m["msg_type"] == "stream" and "fan-out: 6/6 done" in m["content"]["text"])
        or (
            m["msg_type"] == "update_display_data"
            and "fan-out: 6/6 done" in m["content"]["data"].get("text/plain", "")
        )
        for m in messages
    )


NESTED = """
from rlm_kernel.llm.events import CallEvent, bus
bus.emit(CallEvent("batch_start", batch_id="outer", total=3, extra={"label": "sub-RLMs"}))
for i in range(3):
    bus.emit(CallEvent("start", batch_id="outer", call_id=f"sub{i}", index=i))
    parts = [f"sub {i} part {j}" for j in range(4)]
    get_client().complete_batch(parts, max_tokens=4, parent_batch_id="outer")
    bus.emit(CallEvent("finish", batch_id="outer", call_id=f"sub{i}", index=i))
bus.emit(CallEvent("batch_end", batch_id="outer", total=3))
"""


def test_nested_fanouts_show_under_their_parent(widgets_kernel: KernelHarness, server: LLMTestServer) -> None:
    """A fan-out of sub-RLMs whose items fan out themselves: one widget, the inner ones nested in it."""
    since = len(server.requests)
    r = widgets_kernel.execute(NESTED, timeout=60)
    assert r.ok, r
    assert (
        len([d for d in r.display if WIDGET_VIEW in d and d not in display_summaries(r, whole=True)]) == 1
    )  # inner fan-outs open no widget of their own
    nested = [
        m
        for m in r.messages
        if m["msg_type"] == "comm_msg"
        and m["content"]["data"].get("state", {}).get("_dom_classes") == ["rlm-fanout-nested"]
    ]
    assert len(nested) == 3
    inner = server.requests[since:]
    assert len(inner) == 12
    tin = sum(len(q.prompt.split()) for q in inner)
    summary = display_summaries(r)
    assert len(summary) == 1
    assert summary[0].startswith(
        f"fan-out (sub-RLMs): 3/3 done · 0 failed · 0 cached · 3 nested fan-outs · {tin} in"
    )


def display_summaries(r: Any, whole: bool = False) -> list[Any]:
    """Fan-out summaries a widgets-mode cell carries as its widget display's text form (update_display);
    with `whole`, the display bundles themselves."""
    found = [d for d in r.display if str(d.get("text/plain", "")).startswith("fan-out")]
    return found if whole else [d["text/plain"] for d in found]
