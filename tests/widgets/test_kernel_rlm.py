"""Widgets in the real `rlm` kernel: fan-out comms and summary from `llm_query_batched`, `%rlm budget`, modes.

The kernel's LLM calls go to the local test server; its token counts are what the summaries must show.
"""

from __future__ import annotations

import configparser
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rlm_kernel.widgets.text as text
from tests.kernel_client import KernelHarness
from tests.llm_server import Fault, LLMTestServer, count_words

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    srv = LLMTestServer(mode="echo")
    srv.start()
    yield srv
    srv.stop()


def env(server: LLMTestServer, tmp: Path, display: str | None) -> dict[str, str]:
    (tmp / "none.toml").write_text("")
    out = {
        "RLM_PROVIDER": "openai",
        "RLM_BASE_URL": server.openai_base_url,
        "RLM_API_KEY": "sk-test-not-a-key",
        "RLM_MODEL": "test-model",
        "RLM_CACHE": "off",
        "RLM_CONFIG": str(tmp / "none.toml"),
        "PYTHONWARNINGS": "ignore",
    }
    if display is not None:
        out["RLM_DISPLAY"] = display
    return out


@pytest.fixture(scope="module")
def widgets_kernel(
    server: LLMTestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KernelHarness]:
    with KernelHarness(env=env(server, tmp_path_factory.mktemp("w"), "widgets")) as k:
        yield k


@pytest.fixture(scope="module")
def auto_kernel(server: LLMTestServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelHarness]:
    with KernelHarness(env=env(server, tmp_path_factory.mktemp("a"), None), remove_env=("RLM_DISPLAY",)) as k:
        yield k


def sanitize(line: str) -> str:
    cfg = configparser.ConfigParser()
    cfg.read(Path(text.__file__).with_name(text.SANITIZE_CFG))
    for section in cfg.sections():
        line = re.sub(cfg[section]["regex"], cfg[section]["replace"], line)
    return line


def server_usage(
    server: LLMTestServer, since: int, match: Callable[[str], bool] = lambda p: True
) -> tuple[int, int]:
    reqs = [r for r in server.requests[since:] if match(r.prompt)]
    return sum(count_words(r.prompt) for r in reqs), sum(count_words(r.last_user) for r in reqs)


def test_fanout_widget_and_summary_in_the_rlm_kernel(
    widgets_kernel: KernelHarness, server: LLMTestServer
) -> None:
    since = len(server.requests)
    r = widgets_kernel.execute(
        "answers = llm_query_batched([f'tell me about item {i}' for i in range(25)])\nlen(answers)",
        timeout=120,
    )
    assert r.ok, r
    assert r.result == "25"
    views = [d for d in r.display if WIDGET_VIEW in d and d not in display_summaries(r, whole=True)]
    assert len(views) == 1 and views[0]["text/plain"] == "[fan-out widget: 25 calls]"
    bars = {
        m["content"]["comm_id"]
        for m in r.messages
        if m["msg_type"] == "comm_open"
        and m["content"]["data"]["state"].get("_model_name") == "IntProgressModel"
    }
    assert len(bars) == 1
    bar_updates = [
        m["content"]["data"]["state"]
        for m in r.messages
        if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] in bars
    ]
    assert [s["value"] for s in bar_updates if "value" in s][-1] == 25
    assert [s["bar_style"] for s in bar_updates if "bar_style" in s][-1] == "success"
    tin, tout = server_usage(server, since)
    assert not [line for line in r.stdout.splitlines() if line.startswith("fan-out")]  # no second line
    summary = display_summaries(r)
    assert [sanitize(s) for s in summary] == [
        "fan-out (25 prompts, first: tell me about item 0): 25/25 done · 0 failed · 0 cached · "
        f"{tin:,} in / {tout:,} out tokens · $0.0000 · took T s"
    ]


def test_budget_magic_shows_the_session_totals(widgets_kernel: KernelHarness, server: LLMTestServer) -> None:
    r = widgets_kernel.execute("%rlm budget", timeout=30)
    assert r.ok, r
    assert WIDGET_VIEW in (r.result_data or {})
    tin, tout = server_usage(server, 0)
    calls = len(server.requests)
    tokens = f"{tin:,} in tokens · {tout:,} out tokens"
    assert r.result == f"budget: {calls} calls · {tokens} · $0.0000 · 0 cache hits · depth 0"
    r = widgets_kernel.execute("%rlm budget text", timeout=30)
    assert r.ok and WIDGET_VIEW not in (r.result_data or {})
    assert r.result.startswith(f"budget: {calls} calls")


def test_failed_items_are_counted_and_the_summary_precedes_the_error(
    widgets_kernel: KernelHarness, server: LLMTestServer
) -> None:
    server.when("poison", Fault.http(400, body='{"error": {"message": "bad request"}}'))
    try:
        r = widgets_kernel.execute(
            "answers = llm_query_batched(['fine one', 'poison pill', 'fine two', 'poison again'])", timeout=60
        )
    finally:
        server.reset()
    assert r.status == "error"
    assert (
        "fan-out (4 prompts, first: fine one): 2/4 done · 2 failed · 0 cached · " in display_summaries(r)[0]
    )
    failed_bar = [
        m["content"]["data"]["state"]["bar_style"]
        for m in r.messages
        if m["msg_type"] == "comm_msg" and "bar_style" in m["content"]["data"].get("state", {})
    ]
    assert failed_bar[-1] == "warning"


def test_display_off_via_rlm_set(widgets_kernel: KernelHarness) -> None:
    assert widgets_kernel.execute("%rlm set display=off").ok
    try:
        r = widgets_kernel.execute("%rlm display")
        assert r.result.startswith("display: off (%rlm set display)")
        r = widgets_kernel.execute("answers = llm_query_batched(['a', 'b'])", timeout=60)
        assert r.ok, r
        assert "fan-out" not in r.stdout
        assert not any(m["msg_type"] == "comm_open" for m in r.messages)
    finally:
        widgets_kernel.execute("%rlm set display=")
    bad = widgets_kernel.execute("%rlm set display=sparkly")
    assert bad.status == "error" and "display" in (bad.error_value or "")


def test_auto_without_a_widget_frontend_writes_text_only(
    auto_kernel: KernelHarness, server: LLMTestServer
) -> None:
    r = auto_kernel.execute("%rlm display")
    assert r.result.startswith("display: text (auto: no widget frontend connected)")
    since = len(server.requests)
    r = auto_kernel.execute(
        "print('start')\nanswers = llm_query_batched(['one', 'two words', 'three more words'])", timeout=60
    )
    assert r.ok, r
    assert not any(m["msg_type"] in ("comm_open", "display_data") for m in r.messages)
    tin, tout = server_usage(server, since)
    tokens = f"{tin:,} in / {tout:,} out tokens"
    summary = (
        f"fan-out (3 prompts, first: one): 3/3 done · 0 failed · 0 cached · {tokens} · $0.0000 · took T s"
    )
    assert sanitize(r.stdout) == f"start\n{summary}\n"
    r = auto_kernel.execute("%rlm budget")
    assert r.result.startswith("budget: 3 calls") and WIDGET_VIEW not in (r.result_data or {})


def test_interrupt_mid_batch_still_reports_in_the_cell(
    auto_kernel: KernelHarness, server: LLMTestServer
) -> None:
    # the kernel's first model call also starts the broker's HTTP stack (seconds on a busy machine): warm it
    # up first, so that calls are answered before the interrupt below
    assert auto_kernel.execute("llm_query('warm up')", timeout=60).ok
    server.latency = 2.0  # 4 waves of 16: 8 s, so the interrupt lands mid-way even on a busy machine
    before = len(server.requests)  # the server is shared by the module's tests
    try:
        msg_id = auto_kernel.kc.execute("answers = llm_query_batched([f'slow {i}' for i in range(64)])")
        deadline = time.monotonic() + 60  # a 17th request means an answer came back: awaited, not slept for
        while len(server.requests) - before < 17 and time.monotonic() < deadline:
            time.sleep(0.05)
        auto_kernel.interrupt()
        r = auto_kernel.collect(msg_id, timeout=60)
    finally:
        server.latency = 0.0
    assert r.status == "error"
    summary = [line for line in r.stdout.splitlines() if line.startswith("fan-out")]
    assert len(summary) == 1, r.stdout
    line = summary[0]
    done = int(re.match(r"fan-out \(64 prompts, first: slow 0\): (\d+)/64 done", line).group(1))
    assert 0 < done < 64
    assert " cancelled · " in line and "not run" in line and " 0 failed " in line, line


def test_fanout_inside_a_root_loop_run_shows_in_the_rlm_cell(
    widgets_kernel: KernelHarness, server: LLMTestServer
) -> None:
    from tests.rootloop.script import Script, repl

    script = Script(
        root=[
            repl("answers = llm_query_batched(['part ' + str(i) for i in range(12)])\nprint(len(answers))"),
            repl("FINAL_VAR(answers)"),
        ]
    )
    server.reply_with(script)
    try:
        r = widgets_kernel.execute("%%rlm --max-iterations 3\nSummarise the parts.", timeout=120)
    finally:
        server.reset()
    assert r.ok, r
    fanouts = [d for d in r.display if d.get("text/plain") == "[fan-out widget: 12 calls]"]
    assert len(fanouts) == 1 and WIDGET_VIEW in fanouts[0]
    summary = display_summaries(r)
    assert len(summary) == 1 and summary[0].startswith(
        "fan-out (12 prompts, first: part 0): 12/12 done · 0 failed · 0 cached · "
    ), r.display


def display_summaries(r: Any, whole: bool = False) -> list[Any]:
    """Fan-out summaries a widgets-mode cell carries as its widget display's text form (update_display);
    with `whole`, the display bundles themselves."""
    found = [d for d in r.display if str(d.get("text/plain", "")).startswith("fan-out")]
    return found if whole else [d["text/plain"] for d in found]
