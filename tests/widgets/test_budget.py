"""Budget widget: snapshot normalisation, gauge styles at 80 %/100 %, live refresh from events, text line."""

from __future__ import annotations

import time

import pytest

from rlm_kernel.llm.budget import Budget
from rlm_kernel.llm.events import CallEvent, EventBus
from rlm_kernel.widgets.budget import BudgetDisplay, BudgetMonitor, gauge_style, normalise_snapshot
from tests.widgets.manual_scheduler import ManualScheduler


@pytest.mark.parametrize(
    ("used", "cap", "style"),
    [
        (0, 10, ""),
        (7.9, 10, ""),
        (8, 10, "warning"),
        (9.99, 10, "warning"),
        (10, 10, "danger"),
        (12, 10, "danger"),
        (5, None, ""),
        (0, 0, ""),
        (1, 0, "danger"),
    ],
)
def test_gauge_style(used: float, cap: float | None, style: str) -> None:
    assert gauge_style(used, cap) == style


def spend(budget: Budget, calls: int, tin: int, tout: int, usd: float | None) -> None:
    for _ in range(calls):
        r = budget.reserve(tin, tout, usd)
        budget.settle(r, tin, tout, usd)


def test_normalise_real_budget_snapshot() -> None:
    b = Budget(max_calls=10, max_usd=1.0, max_depth=2, label="run")
    spend(b, 8, 100, 20, 0.01)
    b.record_cached()
    n = normalise_snapshot(b.snapshot(), current_depth=1)
    assert n["calls"] == 8 and n["input_tokens"] == 800 and n["output_tokens"] == 160
    assert n["usd"] == pytest.approx(0.08)
    assert n["cache_hits"] == 1 and n["depth"] == 1 and n["label"] == "run"
    assert (n["max_calls"], n["max_usd"], n["max_depth"]) == (10, 1.0, 2)
    assert "max_input_tokens" not in n


def test_view_gauges_and_live_refresh() -> None:
    local_bus = EventBus()
    monitor = BudgetMonitor(subscribe=local_bus.subscribe)
    b = Budget(max_calls=10, max_input_tokens=1000)
    view = monitor.view_for(b)
    assert monitor.view_for(b) is view  # one live instance per budget
    calls_row = view.rows["calls"]
    assert calls_row[1].bar_style == "" and "0 of 10" in calls_row[2].value
    spend(b, 8, 100, 1, None)
    local_bus.emit(CallEvent(kind="finish", call_id="x", input_tokens=100, output_tokens=1))
    deadline = time.monotonic() + 30  # an event-wait: a long deadline costs nothing when it passes
    while "8 of 10" not in calls_row[2].value and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "8 of 10 (80%)" in calls_row[2].value
    assert calls_row[1].bar_style == "warning"
    assert view.rows["input_tokens"][1].bar_style == "warning"
    spend(b, 2, 100, 1, None)
    local_bus.emit(CallEvent(kind="finish", call_id="y"))
    deadline = time.monotonic() + 30  # an event-wait: a long deadline costs nothing when it passes
    while calls_row[1].bar_style != "danger" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert calls_row[1].bar_style == "danger"
    # uncapped figures show a value without a visible gauge
    out_row = view.rows["output_tokens"]
    assert out_row[1].layout.display == "none" and "10" in out_row[2].value
    assert calls_row[1].layout.display == ""
    monitor.close()


def test_current_depth_follows_calls_in_flight() -> None:
    local_bus = EventBus()
    monitor = BudgetMonitor(subscribe=local_bus.subscribe)
    local_bus.emit(CallEvent(kind="start", call_id="a", depth=0))
    local_bus.emit(CallEvent(kind="start", call_id="b", depth=2))
    assert monitor.current_depth() == 2
    local_bus.emit(CallEvent(kind="finish", call_id="b", depth=2))
    assert monitor.current_depth() == 0
    monitor.close()


def test_mimebundle_text_and_widget() -> None:
    b = Budget(max_usd=0.5, label="map_reduce")
    spend(b, 3, 10, 5, 0.1)
    text = BudgetDisplay(b, mode="text")._repr_mimebundle_()
    assert text == {
        "text/plain": "budget: 3 calls · 30 in tokens · 15 out tokens · $0.3000 of $0.5000 · "
        "0 cache hits · depth 0"
    }
    both = BudgetDisplay(b, mode="widgets")._repr_mimebundle_()
    assert both["text/plain"] == text["text/plain"]
    assert "model_id" in both["application/vnd.jupyter.widget-view+json"]
    assert repr(BudgetDisplay(b)) == text["text/plain"]


def test_a_budget_displays_itself_through_ipython(monkeypatch: pytest.MonkeyPatch) -> None:
    """`display(budget)`: the widgets package registers the budget display with IPython's formatter
    (`register_displays`); the LLM layer itself knows nothing of widgets (the same bundle as above)."""
    from types import SimpleNamespace

    from IPython.core.formatters import DisplayFormatter

    from rlm_kernel.widgets.budget import register_displays

    b = Budget(max_calls=10, label="run")
    spend(b, 2, 7, 3, 0.0)
    line = "budget: 2 of 10 calls · 14 in tokens · 6 out tokens · $0.0000 · 0 cache hits · depth 0"
    monkeypatch.setenv("RLM_DISPLAY", "text")
    assert DisplayFormatter().format(b)[0] == {"text/plain": repr(b)}  # not registered: the plain repr
    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    register_displays(shell)
    data, _meta = shell.display_formatter.format(b)
    assert data == {"text/plain": line}
    monkeypatch.setenv("RLM_DISPLAY", "widgets")
    data, _meta = shell.display_formatter.format(b)
    assert data["text/plain"] == line
    assert "model_id" in data["application/vnd.jupyter.widget-view+json"]
    monkeypatch.setenv("RLM_DISPLAY", "sparkly")  # an invalid setting still shows the text line
    assert shell.display_formatter.format(b)[0] == {"text/plain": line}


def test_batch_end_flushes_at_once() -> None:
    local_bus = EventBus()
    sched = ManualScheduler()  # scheduled refreshes run only when the test advances time
    monitor = BudgetMonitor(subscribe=local_bus.subscribe, scheduler=sched)
    b = Budget()
    view = monitor.view_for(b)
    spend(b, 5, 10, 1, None)
    local_bus.emit(CallEvent(kind="finish", call_id="x"))
    assert ">0<" in view.rows["calls"][2].value and sched.pending == 1  # coalesced: not yet refreshed
    local_bus.emit(CallEvent(kind="batch_end", batch_id="b"))
    assert ">5<" in view.rows["calls"][2].value  # batch_end refreshed synchronously
    monitor.close()
