"""The LLM session: one object per kernel owns the settings, default client, session budget, event bus and
running cell's parent; two sessions share none of them, and the public helpers act on the current one."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel.llm import LLMSession, bus, current_session, get_client, get_session_budget, use_session
from rlm_kernel.llm.config import load_config
from rlm_kernel.llm.events import CallEvent, current_parent, set_current_parent
from rlm_kernel.llm.session_settings import get_settings, set_setting


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    monkeypatch.setenv("RLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RLM_MODEL", "env-model")
    monkeypatch.setenv("RLM_CACHE", "off")


def test_the_test_runs_in_its_own_session(llm_session: LLMSession) -> None:
    assert current_session() is llm_session and llm_session.settings == {}


def test_two_sessions_share_no_state(env: None, llm_session: LLMSession) -> None:
    set_setting("model", "mine")
    get_session_budget().set_limits(max_calls=5)
    set_current_parent({"header": {"msg_id": "cell-1"}})
    seen: list[str] = []
    bus.subscribe(lambda e: seen.append(e.kind))
    other = LLMSession()
    with use_session(other):
        assert current_session() is other
        assert get_settings() == {} and load_config().models["fast"] == "env-model"
        assert get_client().config.models["fast"] == "env-model"
        assert get_session_budget().limits["max_calls"] is None
        assert current_parent() == {}
        bus.emit(CallEvent("start"))  # the other session's subscribers only
    assert seen == []
    assert current_session() is llm_session
    assert get_client().config.models["fast"] == "mine" and get_client() is not get_client(other)
    assert get_session_budget() is llm_session.budget and llm_session.budget.limits["max_calls"] == 5
    assert current_parent()["header"]["msg_id"] == "cell-1"
    bus.emit(CallEvent("finish"))
    assert seen == ["finish"]
    other.close()


def test_settings_can_be_given_a_session_explicitly(env: None, llm_session: LLMSession) -> None:
    other = LLMSession()
    set_setting("model", "theirs", session=other)
    assert get_settings() == {} and get_settings(other) == {"model": "theirs"}
    assert load_config(session=other).models["fast"] == "theirs"
    assert get_client(other).config.models["fast"] == "theirs"
    assert get_session_budget(other) is not get_session_budget()
    other.close()


def test_closing_a_session_retires_its_client(env: None, llm_session: LLMSession) -> None:
    client = get_client()
    llm_session.close()
    assert llm_session.client is None
    with pytest.raises(Exception, match="closed"):
        client.complete("x")


def test_slots_hold_per_session_state_of_the_layers_above(llm_session: LLMSession) -> None:
    made = llm_session.slot("tests.counter", lambda: [0])
    made[0] += 1
    assert llm_session.slot("tests.counter", lambda: [99]) == [1]
    assert LLMSession().slot("tests.counter", lambda: [0]) == [0]
