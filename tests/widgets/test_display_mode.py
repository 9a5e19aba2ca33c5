"""Display mode resolution: %rlm set → RLM_DISPLAY → config file → auto (widget frontend or not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel.llm import config, session_settings
from rlm_kernel.llm.errors import ConfigError
from rlm_kernel.widgets.display_mode import parse_mode, register_setting, resolve_mode


@pytest.fixture(autouse=True)
def _display_setting():
    register_setting()  # the test's own LLM session (tests/conftest.py) starts without settings


def test_auto_depends_on_the_frontend(tmp_path: Path) -> None:
    env = {"RLM_CONFIG": str(tmp_path / "none.toml")}
    (tmp_path / "none.toml").write_text("")
    assert resolve_mode(env, widgets_available=True) == ("widgets", "auto: a widget frontend is connected")
    assert resolve_mode(env, widgets_available=False) == ("text", "auto: no widget frontend connected")


def test_env_then_settings_override(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('display = "off"\n')
    env = {"RLM_CONFIG": str(cfg)}
    assert resolve_mode(env, widgets_available=True) == ("off", f"config file {cfg}")
    env["RLM_DISPLAY"] = "Widgets"
    assert resolve_mode(env, widgets_available=False) == ("widgets", "env RLM_DISPLAY")
    session_settings.set_setting("display", "text")  # what `%rlm set display=text` does
    assert resolve_mode(env, widgets_available=True) == ("text", "%rlm set display")
    session_settings.set_setting("display", "auto")
    assert resolve_mode(env, widgets_available=True)[0] == "widgets"


def test_invalid_values_name_their_source(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="RLM_DISPLAY: display must be one of auto, off, text, widgets"):
        resolve_mode({"RLM_DISPLAY": "fancy", "RLM_CONFIG": str(tmp_path / "x.toml")})
    with pytest.raises(ConfigError, match="display"):
        session_settings.set_setting("display", "sparkly")
    with pytest.raises(ValueError):
        parse_mode("")


def test_display_is_a_known_setting_everywhere() -> None:
    assert "display" in config.SETTINGS
    # the LLM layer's own resolution accepts RLM_DISPLAY now (it would reject an unknown key in the file)
    session_settings.set_setting("display", "widgets")
    assert session_settings.get_settings()["display"] == "widgets"
