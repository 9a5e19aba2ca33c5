"""Display mode of live views: `off`, `text` or `widgets`; `auto` = widgets only when a widget frontend is on.

Resolved like other settings: `%rlm set display=…` → env `RLM_DISPLAY` → config file `display = "…"` → auto.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import Any, Literal

from rlm_kernel.llm.config import config_path
from rlm_kernel.llm.config import register_setting as register_llm_setting
from rlm_kernel.llm.session_settings import get_settings
from rlm_kernel.widgets.lib import imported

__all__ = ["MODES", "DisplayMode", "frontend_has_widgets", "parse_mode", "register_setting", "resolve_mode"]

DisplayMode = Literal["off", "text", "widgets"]
MODES = ("auto", "off", "text", "widgets")
_WHAT = "one of auto, off, text, widgets (how fan-outs and budgets are shown)"


def parse_mode(value: Any) -> str:
    """Validate a display setting; raises ValueError (the config layer turns it into a clear ConfigError)."""
    text = str(value).strip().lower()
    if text not in MODES:
        raise ValueError(f"display must be {_WHAT}, got {value!r}")
    return text


def register_setting() -> None:
    """Make `display` a known setting so `%rlm set display=…`, `RLM_DISPLAY` and the TOML file accept it."""
    register_llm_setting("display", parse_mode, "auto", _WHAT)


def frontend_has_widgets() -> bool:
    """True once a widget-capable frontend (JupyterLab, Notebook 7) has opened ipywidgets' control comm.

    Those frontends open `jupyter.widget.control` when they connect to the kernel to restore widget state;
    nbclient, nbconvert, `jupyter console` and nbval never do.
    """
    if not imported():  # the control comm's first opening imports ipywidgets (rlm_kernel.widgets.lib)
        return False
    try:
        from ipywidgets import Widget
    except ImportError:
        return False
    return getattr(Widget, "_control_comm", None) is not None


def _from_settings() -> tuple[str | None, str]:
    value = get_settings().get("display")
    return (parse_mode(value), "%rlm set display") if value is not None else (None, "")


def _from_toml(environ: Mapping[str, str]) -> tuple[str | None, str]:
    path = config_path(environ)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None, ""  # the LLM layer reports unreadable config files; display falls back to auto
    value = data.get("display")
    if value is None:
        return None, ""
    try:
        return parse_mode(value), f"config file {path}"
    except ValueError as exc:
        raise ValueError(f"config file {path}: {exc}") from None


def resolve_mode(
    environ: Mapping[str, str] | None = None, widgets_available: bool | None = None
) -> tuple[DisplayMode, str]:
    """The effective mode and where it came from, e.g. `("text", "auto: no widget frontend connected")`.

    An invalid value raises ValueError naming the source, so `%rlm display` can say what to fix.
    """
    env = os.environ if environ is None else environ
    chosen, source = _from_settings()
    if chosen is None:
        raw = env.get("RLM_DISPLAY", "").strip()
        if raw:
            try:
                chosen, source = parse_mode(raw), "env RLM_DISPLAY"
            except ValueError as exc:
                raise ValueError(f"environment variable RLM_DISPLAY: {exc}") from None
    if chosen is None:
        chosen, source = _from_toml(env)
    if chosen is None or chosen == "auto":
        has = frontend_has_widgets() if widgets_available is None else widgets_available
        why = "a widget frontend is connected" if has else "no widget frontend connected"
        return ("widgets" if has else "text"), f"auto: {why}" + (f" ({source})" if source else "")
    return chosen, source  # type: ignore[return-value]
