"""`%rlm set` settings of an LLM session: validated when set, kept in `LLMSession.settings`.

`load_config` reads them between explicit arguments and the environment. `cache_dir` may only point under
the cache directory fixed at start, and a budget limit set at start may only be tightened: the LLM broker
holds the start-time configuration and refuses anything beyond it (a cell's setting may only narrow it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rlm_kernel.llm.config import SETTINGS, _parse, _read_toml, _unknown, load_config, start_cache_dir
from rlm_kernel.llm.errors import ConfigError
from rlm_kernel.llm.redact import register_secret
from rlm_kernel.llm.session import LLMSession, current_session

__all__ = ["get_settings", "restore_settings", "set_setting", "settings_snapshot", "settings_version"]


def _start_cache_dirs() -> list[Path]:
    """Where `%rlm set cache_dir=` may point: under the cache directory configured at start (RLM_CACHE_DIR,
    else the TOML file's, else the default beside the notebook) — the one the broker accepts."""
    raw = os.environ.get("RLM_CACHE_DIR")
    if not raw:
        try:
            raw = _read_toml(os.environ)[0].get("cache_dir")
        except ConfigError:
            raw = None
    return [start_cache_dir(str(raw) if raw else None)]


def _check_budget(key: str, value: Any) -> None:
    """A `%rlm set budget_max_...` above the limit set at start is refused: the broker keeps that one."""
    try:
        start = load_config(use_settings=False).budget_limits.get(key[len("budget_") :])
    except ConfigError:
        return  # a broken start-time configuration is reported by the call that uses it
    if start is not None and value > start:
        raise ConfigError(
            f"%rlm set {key}={value} is above the limit set when the kernel started ({start}); from a cell a "
            "budget limit may only be tightened — raise it in the kernel's environment (RLM_"
            f"{key.upper()}) or the settings file and restart the kernel",
            key=key,
            source="%rlm set",
        )


def _check_cache_dir(value: str) -> str:
    """A `%rlm set cache_dir=` value, refused unless it lies under a place fixed at start."""
    resolved = start_cache_dir(value)
    places = _start_cache_dirs()
    if not any(resolved == p or resolved.is_relative_to(p) for p in places):
        listed = ", ".join(str(p) for p in places)
        raise ConfigError(
            f"%rlm set cache_dir={value!r} resolves to {resolved}, outside the places fixed at start "
            f"({listed}); choose a directory under one of them, or set RLM_CACHE_DIR before starting "
            "the kernel",
            key="cache_dir",
            source="%rlm set",
        )
    return value


def set_setting(key: str, value: Any, session: LLMSession | None = None) -> None:
    """Set (or with value None/"" unset) a session setting, as `%rlm set key=value` does; validated now.

    `cache_dir` must stay under the places fixed at start (`_start_cache_dirs`). `session`: the current one
    unless given.
    """
    if type(key) is not str or not (value is None or type(value) is str):
        raise ConfigError("%rlm set: settings are text, as written on the %rlm set line", source="%rlm set")
    key = key.strip()
    s = session or current_session()
    with s.lock:
        if value is None or (isinstance(value, str) and not value.strip()):
            if key not in SETTINGS:
                raise _unknown(key, "%rlm set")
            s.settings.pop(key, None)
        else:
            parsed = _parse(key, value, "%rlm set")
            if key == "cache_dir":
                parsed = _check_cache_dir(parsed)
            if key.startswith("budget_max_"):
                _check_budget(key, parsed)
            if key == "api_key":
                register_secret(parsed)
            s.settings[key] = parsed
        s.settings_version += 1


def settings_snapshot(session: LLMSession | None = None) -> dict[str, Any]:
    """The session settings as they are (for `restore_settings`; holds a typed key: keep it in the layer)."""
    s = session or current_session()
    with s.lock:
        return dict(s.settings)


def restore_settings(values: dict[str, Any], session: LLMSession | None = None) -> None:
    """Put back the session settings `settings_snapshot` returned (e.g. after the broker refused a change)."""
    s = session or current_session()
    with s.lock:
        s.settings.clear()
        s.settings.update(values)
        s.settings_version += 1


def get_settings(session: LLMSession | None = None) -> dict[str, Any]:
    """A copy of the session settings, with any key shown as "<set>"."""
    return {k: ("<set>" if k == "api_key" else v) for k, v in settings_snapshot(session).items()}


def settings_version(session: LLMSession | None = None) -> int:
    """Increases on every `%rlm set`; the session's client and budget follow the settings when it changes."""
    return (session or current_session()).settings_version
