"""Configuration order, TOML file, validation naming the bad key, provider inference, tiers, magics."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel.llm import ConfigError, LLMClient, get_client, load_config, reset_client
from rlm_kernel.llm.config import config_path, set_setting
from rlm_kernel.llm.settings_magic import rlm_providers, rlm_set, rlm_show
from rlm_kernel.llm.tiers import choose_tier, resolve_model

URL = "http://127.0.0.1:9/v1"


def _toml(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return {"RLM_CONFIG": str(path)}


def test_order_explicit_settings_env_toml_default(tmp_path: Path) -> None:
    env = {
        **_toml(tmp_path, 'base_url = "http://toml/v1"\nconcurrency = 3\n[models]\nfast = "toml-fast"\n'),
        "RLM_MODEL_FAST": "env-fast",
        "RLM_CONCURRENCY": "5",
    }
    cfg = load_config(environ=env)
    assert (cfg.base_url, cfg.models["fast"], cfg.concurrency) == ("http://toml/v1", "env-fast", 5)
    assert cfg.sources["model_fast"] == "env RLM_MODEL_FAST" and cfg.sources["base_url"].startswith(
        "config file"
    )
    set_setting("model_fast", "set-fast")
    set_setting("concurrency", "7")
    cfg = load_config(environ=env)
    assert (cfg.models["fast"], cfg.concurrency) == ("set-fast", 7)
    cfg = load_config(environ=env, model_fast="explicit-fast", concurrency=9)
    assert (cfg.models["fast"], cfg.concurrency) == ("explicit-fast", 9)
    assert cfg.max_retries == 4 and cfg.sources["max_retries"] == "default"


def test_model_sets_every_tier_unless_tier_given() -> None:
    cfg = load_config(environ={"RLM_BASE_URL": URL, "RLM_MODEL": "m", "RLM_MODEL_POWERFUL": "big"})
    assert cfg.models == {"fast": "m", "balanced": "m", "powerful": "big"}


def test_toml_tables_and_prices(tmp_path: Path) -> None:
    env = _toml(
        tmp_path,
        """
provider = "anthropic"
base_url = "http://127.0.0.1:9"
cache = "replay"
[models]
default = "claude-x"
root = "balanced"
[budget]
max_usd = 2.5
max_calls = 100
[prices."claude-x"]
input = 1.5
output = 7.5
""",
    )
    cfg = load_config(environ=env)
    assert (
        cfg.provider == "anthropic" and cfg.models["balanced"] == "claude-x" and cfg.root_model == "balanced"
    )
    assert cfg.budget_limits == {"max_calls": 100, "max_usd": 2.5}
    assert cfg.prices == {"claude-x": (1.5, 7.5)} and cfg.cache == "replay"


def test_default_toml_path(tmp_path: Path) -> None:
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "rlm-kernel" / "config.toml"
    (tmp_path / "rlm-kernel").mkdir()
    (tmp_path / "rlm-kernel" / "config.toml").write_text(f'base_url = "{URL}"\nmodel = "from-file"\n')
    assert load_config(environ={"XDG_CONFIG_HOME": str(tmp_path)}).models["fast"] == "from-file"


@pytest.mark.parametrize(
    ("env", "key", "where"),
    [
        ({"RLM_CONCURRENCY": "many"}, "concurrency", "RLM_CONCURRENCY"),
        ({"RLM_CACHE": "sometimes"}, "cache", "RLM_CACHE"),
        ({"RLM_PROVIDER": "bard"}, "provider", "RLM_PROVIDER"),
        ({"RLM_TIMEOUT": "-1"}, "timeout", "RLM_TIMEOUT"),
        ({"RLM_MAX_RETRIES": "1.5"}, "max_retries", "RLM_MAX_RETRIES"),
    ],
)
def test_invalid_env_names_the_key(env: dict[str, str], key: str, where: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(environ={"RLM_BASE_URL": URL, **env})
    assert info.value.key == key and key in str(info.value) and where in str(info.value)


def test_unknown_toml_key_is_named_with_a_suggestion(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(environ=_toml(tmp_path, "concurency = 4\n"))
    assert "'concurency'" in str(info.value) and "did you mean 'concurrency'" in str(info.value)
    assert str(tmp_path) in str(info.value)
    with pytest.raises(ConfigError, match="models.fastest"):
        load_config(environ=_toml(tmp_path, '[models]\nfastest = "x"\n'))


def test_broken_toml_and_missing_rlm_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(environ=_toml(tmp_path, "this is = = not toml"))
    with pytest.raises(ConfigError, match="RLM_CONFIG points at"):
        load_config(environ={"RLM_CONFIG": str(tmp_path / "absent.toml")})


def test_unknown_explicit_and_set_keys() -> None:
    with pytest.raises(ConfigError, match="unknown LLM setting 'modle'"):
        load_config(environ={}, modle="x")
    with pytest.raises(ConfigError, match="unknown LLM setting 'colour'"):
        set_setting("colour", "blue")


@pytest.mark.parametrize(
    ("env", "provider", "base_url"),
    [
        ({"OPENAI_API_KEY": "sk-aaaaaaaaaaaaaaaaaaaa"}, "openai", "https://api.openai.com/v1"),
        ({"ANTHROPIC_API_KEY": "anthropic-key-123"}, "anthropic", "https://api.anthropic.com"),
        ({"GEMINI_API_KEY": "gemini-key-123"}, "gemini", "https://generativelanguage.googleapis.com/v1beta"),
        ({"GOOGLE_API_KEY": "google-key-123"}, "gemini", "https://generativelanguage.googleapis.com/v1beta"),
        ({"RLM_BASE_URL": URL}, "openai", URL),
        ({"OPENAI_BASE_URL": URL}, "openai", URL),
        ({}, "local", None),
    ],
)
def test_provider_inference(env: dict[str, str], provider: str, base_url: str | None) -> None:
    cfg = load_config(environ=env)
    assert (cfg.provider, cfg.base_url) == (provider, base_url)
    if provider in ("anthropic", "gemini") or "OPENAI_API_KEY" in env:  # the key was found too
        assert cfg.has_api_key and all(cfg.models.values())
    if provider == "local":
        assert all(cfg.models.values())


def test_official_endpoint_without_key_is_an_error() -> None:
    with pytest.raises(ConfigError, match="needs an API key: set RLM_API_KEY or ANTHROPIC_API_KEY") as info:
        load_config(environ={"RLM_PROVIDER": "anthropic"})
    assert info.value.key == "api_key"


def test_rlm_api_key_beats_provider_key() -> None:
    cfg = load_config(
        environ={"RLM_API_KEY": "rlm-key-123456", "OPENAI_API_KEY": "sk-bbbbbbbbbbbbbbbbbbbbbb"}
    )
    assert cfg.api_key_for_request() == "rlm-key-123456" and cfg.sources["api_key"] == "env RLM_API_KEY"


def test_secret_store_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secrets = pytest.importorskip("rlm_kernel.secrets")
    for name in (
        "RLM_BASE_URL",
        "RLM_PROVIDER",
        "RLM_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "RLM_CONFIG",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    secrets.set_secret("GEMINI_API_KEY", "gemini-env-key-1")  # as the kernel does with its environment
    try:
        cfg = load_config()
        assert cfg.provider == "gemini" and cfg.api_key_for_request() == "gemini-env-key-1"
    finally:
        secrets._store.pop("GEMINI_API_KEY", None)  # noqa: SLF001 - undo this test's planting


def test_custom_endpoint_without_model_fails_at_call_with_the_key_name() -> None:
    cfg = load_config(environ={"RLM_BASE_URL": URL})
    with pytest.raises(ConfigError, match="RLM_MODEL_FAST") as info:
        resolve_model("fast", role="map", prompt_tokens=1, config=cfg)
    assert info.value.key == "model_fast"


def test_auto_rule() -> None:
    assert choose_tier("map", 100) == "fast"
    assert choose_tier("map", 8000) == "fast"
    assert choose_tier("map", 8001) == "balanced"
    assert choose_tier("synthesis", 10) == "powerful"
    assert choose_tier("map", 500, fast_max_tokens=400) == "balanced"
    cfg = load_config(environ={"RLM_BASE_URL": URL, "RLM_MODEL": "m", "RLM_MODEL_FAST": "tiny"})
    assert resolve_model(None, role="map", prompt_tokens=5, config=cfg) == ("fast", "tiny")
    assert resolve_model("gpt-x", role="map", prompt_tokens=5, config=cfg) == (None, "gpt-x")


def test_get_client_follows_rlm_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    monkeypatch.setenv("RLM_BASE_URL", URL)
    monkeypatch.setenv("RLM_MODEL", "first")
    reset_client()
    try:
        first = get_client()
        assert isinstance(first, LLMClient) and get_client() is first
        rlm_set("model=second cache=off")
        second = get_client()
        assert second is not first and second.config.models["fast"] == "second"
        assert second.config.cache == "off"
    finally:
        reset_client()


def test_magics_show_never_the_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    monkeypatch.setenv("RLM_BASE_URL", URL)
    monkeypatch.setenv("RLM_MODEL", "m1")
    secret = "sk-magic-0123456789abcdefghij"
    changed = rlm_set(f"api_key={secret} model_fast=quick")
    shown = rlm_show()
    table = rlm_providers()
    for obj in (changed, shown, table):
        assert secret not in repr(obj) and secret not in obj._repr_html_()
    text = repr(shown)
    assert "api_key" in text and "yes" in text and "quick" in text and "%rlm set" in text
    assert "▶ openai" in repr(table) and "anthropic" in repr(table)
    with pytest.raises(ConfigError, match="did you mean 'concurrency'"):
        rlm_set("concurency=3")


def test_other_parts_can_register_a_setting(tmp_path: Path) -> None:
    from rlm_kernel.llm.config import SETTINGS, register_setting

    def parse(v: object) -> str:
        if str(v) not in ("a", "b"):
            raise ValueError
        return str(v)

    register_setting("test_extra_knob", parse, "a", "a or b")
    try:
        assert load_config(environ={"RLM_BASE_URL": URL}).extra["test_extra_knob"] == "a"
        assert (
            load_config(environ={"RLM_BASE_URL": URL, "RLM_TEST_EXTRA_KNOB": "b"}).extra["test_extra_knob"]
            == "b"
        )
        with pytest.raises(ConfigError, match="test_extra_knob"):
            set_setting("test_extra_knob", "c")
        register_setting("concurrency", parse, "a", "x")  # the layer's own keys cannot be replaced
        assert SETTINGS["concurrency"][1] == 16
    finally:
        from rlm_kernel.llm import config as config_module

        SETTINGS.pop("test_extra_knob", None)
        config_module._EXTRA_KEYS.remove("test_extra_knob")  # noqa: SLF001


def test_replay_needs_no_key() -> None:
    cfg = load_config(environ={"RLM_PROVIDER": "openai", "RLM_CACHE": "replay"})
    assert cfg.provider == "openai" and not cfg.has_api_key and cfg.cache == "replay"


def test_show_reports_an_invalid_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("RLM_CONFIG", raising=False)
    monkeypatch.setenv("RLM_BASE_URL", URL)
    monkeypatch.setenv("RLM_CONCURRENCY", "lots")
    text = repr(rlm_show())
    assert "invalid" in text and "RLM_CONCURRENCY" in text and "whole number" in text
    assert "no usable configuration" in repr(rlm_providers())
