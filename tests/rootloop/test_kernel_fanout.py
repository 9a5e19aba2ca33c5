"""Fan-outs and budgets of runs in the real `rlm` kernel (local test server, scripted root replies).

`rlm_query_batched` shows as one fan-out with each sub-RLM's fan-outs nested in it; `%%rlm` / `rlm_run`
show the run's own budget (live widget, or one final text line).
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import rlm_kernel.widgets.text as text
from tests.kernel_client import Execution, KernelHarness
from tests.llm_server import LLMTestServer, count_words
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FAN_OUT = "parts = llm_query_batched(['x ' + context, 'y ' + context])\nFINAL(parts[0])"


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    srv = LLMTestServer().start()
    yield srv
    srv.stop()


def start(server: LLMTestServer, tmp: Path, display: str) -> KernelHarness:
    (tmp / "none.toml").write_text("")
    env = {**llm_env(server), "RLM_CONFIG": str(tmp / "none.toml"), "RLM_DISPLAY": display}
    env["PYTHONWARNINGS"] = "ignore"
    return KernelHarness(env=env)


@pytest.fixture(scope="module")
def text_kernel(server: LLMTestServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelHarness]:
    with start(server, tmp_path_factory.mktemp("t"), "text") as k:
        yield k


@pytest.fixture(scope="module")
def widgets_kernel(
    server: LLMTestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KernelHarness]:
    with start(server, tmp_path_factory.mktemp("w"), "widgets") as k:
        yield k


@pytest.fixture(autouse=True)
def _fresh_server(server: LLMTestServer) -> Iterator[None]:
    server.reset()
    yield
    server.reset()


def sanitize(line: str) -> str:
    cfg = configparser.ConfigParser()
    cfg.read(Path(text.__file__).with_name(text.SANITIZE_CFG))
    for section in cfg.sections():
        line = re.sub(cfg[section]["regex"], cfg[section]["replace"], line)
    return line


def run(kernel: KernelHarness, code: str) -> Execution:
    ex = kernel.execute(code, timeout=120)
    assert ex.ok, ex
    return ex


def input_tokens(server: LLMTestServer) -> int:
    return sum(count_words(r.prompt) for r in server.requests)


def child(rec) -> str:  # noqa: ANN001 - a RecordedRequest
    return f"child answer to: {rec.last_user[:60]}"


def fanout_nested(server: LLMTestServer) -> int:
    """Script two sub-RLMs that each fan out twice; returns the output tokens all their calls will report."""
    server.reply_with(Script(root=[], sub=[repl(FAN_OUT), repl(FAN_OUT)], child=child))
    children = [f"{p} task {n}" for n in ("one", "two") for p in ("x", "y")]
    tout = 2 * count_words(repl(FAN_OUT)) + sum(count_words(f"child answer to: {c}") for c in children)
    return tout


def test_rlm_query_batched_is_one_fan_out_with_the_sub_rlms_nested_text(
    text_kernel: KernelHarness, server: LLMTestServer
) -> None:
    tout = fanout_nested(server)
    ex = run(text_kernel, "answers = rlm_query_batched(['task one', 'task two'])\nprint(answers)")
    assert len(server.requests) == 6  # two sub-RLM root calls, four fanned-out child calls
    tin = input_tokens(server)
    lines = ex.stdout.splitlines()
    assert lines[-1] == "['child answer to: x task one', 'child answer to: x task two']"
    summary = [sanitize(line) for line in lines if line.startswith("fan-out")]
    # one summary for the whole thing: the sub-RLMs' own fan-outs are nested in it, every token counted once
    assert summary == [
        "fan-out (2 sub-RLMs, first: task one): 2/2 done · 0 failed · 0 cached · 2 nested fan-outs · "
        f"{tin:,} in / {tout:,} out tokens · $0.0000 · took T s"
    ]


def test_rlm_query_batched_nested_widgets(widgets_kernel: KernelHarness, server: LLMTestServer) -> None:
    fanout_nested(server)
    ex = run(widgets_kernel, "answers = rlm_query_batched(['task one', 'task two'])")
    views = [d for d in ex.display if WIDGET_VIEW in d]
    # the widget (no widget of the sub-RLMs' own), then its update carrying the summary as its text form
    assert [v["text/plain"] for v in views][:1] == ["[fan-out widget: 2 calls]"]
    assert len(views) == 2 and views[1]["text/plain"].startswith("fan-out (2 sub-RLMs")
    nested = {
        m["content"]["comm_id"]
        for m in ex.messages
        if m["msg_type"] in ("comm_open", "comm_msg")
        and "rlm-fanout-nested" in (m["content"]["data"].get("state", {}).get("_dom_classes") or [])
    }
    assert len(nested) == 2
    assert not [line for line in ex.stdout.splitlines() if line.startswith("fan-out")]  # no second line
    assert "2/2 done · 0 failed · 0 cached · 2 nested fan-outs" in views[1]["text/plain"]


def widget_states(messages: list[dict]) -> dict[str, dict]:
    """The widget models opened by these messages, each with its comm_open state updated by its comm_msgs."""
    states: dict[str, dict] = {}
    for m in messages:
        content = m["content"]
        if m["msg_type"] == "comm_open":
            states[content["comm_id"]] = dict(content["data"].get("state", {}))
        elif m["msg_type"] == "comm_msg" and content["comm_id"] in states:
            states[content["comm_id"]].update(content["data"].get("state", {}))
    return states


# the sub-call carries the context (the FINAL gate counts only those); with nothing loaded, or with 'abc',
# the child's answer has the same number of words
RUN = Script(root=[repl("a = llm_query(context + 'check this')\nFINAL(a)")], child=child)


def run_budget_line(server: LLMTestServer) -> str:
    tin = input_tokens(server)
    tout = count_words(RUN.root[0]) + count_words("child answer to: check this")
    tokens = f"{tin:,} in tokens · {tout:,} out tokens"
    return f"rlm run budget: 2 calls · {tokens} · $0.0000 · 0 cache hits · depth 1"


def test_a_run_ends_with_its_own_budget_line_in_text_mode(
    text_kernel: KernelHarness, server: LLMTestServer
) -> None:
    server.reply_with(Script(root=list(RUN.root), child=child))
    ex = run(text_kernel, "%%rlm --max-iterations 3\nCheck it.")
    assert len(server.requests) == 2
    assert ex.stdout.splitlines()[-1] == run_budget_line(server)
    assert "ANSWER: child answer to: check this" in ex.display[-1]["text/plain"]  # the run's view, as before
    server.reset()
    server.reply_with(Script(root=list(RUN.root), child=child))
    ex = run(text_kernel, "r = rlm_run('Check it.', context='abc')")
    assert ex.stdout.splitlines()[-1] == run_budget_line(server)


def test_a_run_shows_its_own_live_budget_widget(widgets_kernel: KernelHarness, server: LLMTestServer) -> None:
    server.reply_with(Script(root=list(RUN.root), child=child))
    ex = run(widgets_kernel, "%%rlm --max-iterations 3\nCheck it.")
    # display(run_budget) → Budget._repr_mimebundle_: the widget, with the budget line as its text
    budgets = [d for d in ex.display if WIDGET_VIEW in d and d["text/plain"].startswith("budget: ")]
    assert len(budgets) == 1, ex.display
    states = widget_states(ex.messages)  # every widget model opened in this cell: its latest state
    assert any(s.get("_dom_classes") == ["rlm-budget"] for s in states.values())
    assert any("(rlm run)" in str(s.get("value", "")) for s in states.values())
    calls = [s for s in states.values() if "rlm-budget-calls" in (s.get("_dom_classes") or [])]
    assert len(calls) == 1
    # live: updated as the calls settled, ending at the run's 2 calls
    assert calls[0]["value"] == "<span class='rlm-budget-value'>2</span>", calls
    assert not any(line.startswith("rlm run budget") for line in ex.stdout.splitlines())
