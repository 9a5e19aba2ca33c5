"""The settings schema (llm/schema.py) is the one declaration every other table is read from."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from rlm_kernel.llm import config
from rlm_kernel.llm.budget import Budget
from rlm_kernel.llm.config import LLMConfig, load_config
from rlm_kernel.llm.schema import BUDGET_DIMS, LLM_SETTINGS, budget_dim
from rlm_kernel.widgets.budget import normalise_snapshot
from rlm_kernel.widgets.text import budget_line

ENV = {"RLM_PROVIDER": "openai", "RLM_BASE_URL": "http://127.0.0.1:9/v1", "RLM_API_KEY": "sk-test"}


def test_llm_config_fields_are_the_schema_fields_with_the_schema_defaults() -> None:
    fields = {f.name: f for f in dataclasses.fields(LLMConfig)}
    for setting in LLM_SETTINGS:
        if setting.field:
            assert setting.name in fields, setting.name
            assert fields[setting.name].default == setting.default, setting.name
    plain = {s.name for s in LLM_SETTINGS if s.field}
    resolved_here = {
        "provider",
        "base_url",
        "models",
        "budget_limits",
        "prices",
        "extra",
        "sources",
        "_api_key",
    }
    assert set(fields) == plain | resolved_here


def test_every_setting_is_validated_read_from_its_env_var_and_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    env = dict(ENV, RLM_CONCURRENCY="3", RLM_BUDGET_MAX_SECONDS="9.5", RLM_CACHE="off")
    cfg = load_config(environ=env, use_settings=False)
    assert cfg.concurrency == 3 and cfg.budget_limits == {"max_seconds": 9.5}
    assert cfg.sources["concurrency"] == "env RLM_CONCURRENCY"
    shown = cfg.as_display()
    schema_keys = {s.name for s in LLM_SETTINGS}  # then the settings other parts registered (display, …)
    assert [k for k in shown if k in schema_keys] == [
        s.name
        for s in LLM_SETTINGS
        if s.shown and (not s.name.startswith("budget_") or s.name == "budget_max_seconds")
    ]
    assert shown["api_key"] == "yes" and shown["budget_max_seconds"] == 9.5
    assert [s.env_var for s in LLM_SETTINGS if s.name == "prices"] == [None]
    with pytest.raises(config.ConfigError, match="expected seconds > 0"):
        load_config(environ=dict(ENV, RLM_BUDGET_MAX_SECONDS="-1"), use_settings=False)


def test_every_budget_dimension_is_a_limit_a_setting_and_a_display_row() -> None:
    params = inspect.signature(Budget).parameters
    for dim in BUDGET_DIMS:
        assert dim.limit in params and dim.setting in config.SETTINGS
        assert budget_dim(dim.limit) is dim
    b = Budget(max_calls=5, max_usd=1.0)
    b.settle(b.reserve(10, 5, 0.25), 10, 5, 0.25)
    norm = normalise_snapshot(b.snapshot())
    assert {d.limit for d in BUDGET_DIMS if d.limit in norm} == {"max_calls", "max_usd"}
    line = budget_line(norm)
    assert line.startswith("budget: 1 of 5 calls · 10 in tokens · 5 out tokens · $0.2500 of $1.0000")
