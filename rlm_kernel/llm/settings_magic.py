"""`%rlm set key=value`, `%rlm show`, `%rlm providers`: the LLM layer's settings from a notebook.

Registered with the kernel's `%rlm` command on import; every output is plain text/HTML and never shows a key.
"""

from __future__ import annotations

import html
import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rlm_kernel.handover import KEY_REF_PREFIX
from rlm_kernel.llm.config import (
    DEFAULT_BASE_URLS,
    DEFAULT_MODELS,
    PROVIDER_KEY_ENV,
    PROVIDERS,
    TIERS,
    _local_model_name,
    config_path,
    load_config,
    provider_key_present,
)
from rlm_kernel.llm.errors import ConfigError, LLMError
from rlm_kernel.llm.redact import redact
from rlm_kernel.llm.session import current_session
from rlm_kernel.llm.session_settings import get_settings, restore_settings, set_setting, settings_snapshot
from rlm_kernel.magics import register_rlm_subcommand
from rlm_kernel.sandbox.origin import refuse_in_model_code

__all__ = ["Table", "providers_table", "register", "rlm_providers", "rlm_set", "rlm_show"]


class Table:
    """A small display object: a title, a header row and rows of strings (text and HTML reprs)."""

    def __init__(
        self, title: str, header: Sequence[str], rows: Sequence[Sequence[Any]], note: str = ""
    ) -> None:
        self.title = title
        self.header = [str(h) for h in header]
        self.rows = [["" if c is None else str(c) for c in row] for row in rows]
        self.note = note

    def __repr__(self) -> str:
        widths = [max(len(r[i]) for r in [self.header, *self.rows]) for i in range(len(self.header))]
        lines = [self.title, "  ".join(h.ljust(w) for h, w in zip(self.header, widths, strict=True))]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in self.rows]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in self.header)
        body = "".join(
            "<tr>" + "".join(f"<td style='text-align:left'>{html.escape(c)}</td>" for c in r) + "</tr>"
            for r in self.rows
        )
        note = f"<p>{html.escape(self.note)}</p>" if self.note else ""
        return f"<b>{html.escape(self.title)}</b><table><tr>{head}</tr>{body}</table>{note}"


_PLAIN_VALUES = (str, int, float, bool, type(None))


def _expand_variable(key: str, value: str) -> str:
    """`key={name}`: the value of the notebook variable `name` (a papermill parameter, say) as text.

    Only a bare name, looked up in the notebook's namespace, and only a value of an exact plain type (text,
    number, True/False, None: unsets) — no expression is evaluated and no object's code runs.
    """
    if not (value.startswith("{") and value.endswith("}")):
        return value
    name = value[1:-1].strip()
    if not name.isidentifier():
        raise ConfigError(
            f"%rlm set {key}={value}: only a variable name may stand in braces, e.g. {{budget}}"
        )
    from IPython import get_ipython

    shell = get_ipython()
    namespace = getattr(shell, "user_ns", None)
    if type(namespace) is not dict or name not in namespace:
        raise ConfigError(f"%rlm set {key}={value}: no variable {name!r} is defined in this notebook")
    found = namespace[name]
    if type(found) not in _PLAIN_VALUES:
        raise ConfigError(
            f"%rlm set {key}={value}: {name!r} is a {type(found).__name__}; only text, numbers, "
            "True/False or None can be a setting"
        )
    return "" if found is None else str(found)


def rlm_set(line: str) -> Table:
    """`%rlm set key=value [key=value ...]` (`key=` unsets; `key={name}` takes the notebook variable `name`,
    e.g. a papermill parameter). Keys: see `%rlm show`.

    Only a person's cell may change settings (model-written code is refused); `cache_dir` stays under the
    places fixed at start.
    """
    refuse_in_model_code("%rlm set")
    try:
        parts = shlex.split(line)
    except ValueError as exc:
        raise ConfigError(f"%rlm set: cannot read {line!r}: {exc}") from None
    if not parts:
        raise ConfigError(
            "usage: %rlm set key=value [key=value ...]  (e.g. %rlm set model_fast=gpt-4.1-nano)"
        )
    pairs = []
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ConfigError(f"%rlm set: expected key=value, got {redact(part)!r}")
        pairs.append((key.strip(), _expand_variable(key.strip(), value)))
    rows = []
    # the broker refuses endpoints not configured at start
    with _guard_endpoint_settings([key for key, _value in pairs]):
        for key, value in pairs:
            set_setting(key, value)
            shown = "<set>" if key == "api_key" and value else (value or "(unset)")
            rows.append((key, shown))
    return Table("LLM settings changed (this session)", ["setting", "value"], rows)


_ENDPOINT_KEYS = ("provider", "base_url", "proxy", "api_key")


@contextmanager
def _guard_endpoint_settings(keys: list[str]) -> Iterator[None]:
    """Around `%rlm set`: if it changed where calls go, ask the broker; on refusal restore the settings."""
    link = current_session().link
    if link is None or not any(k in _ENDPOINT_KEYS for k in keys):
        yield
        return
    before = settings_snapshot()
    yield
    try:
        resolved = load_config()
    except ConfigError:
        return  # invalid for another reason: that error shows at the next call, as before
    fields = {
        "base_url": resolved.base_url,
        "proxy": resolved.proxy,
        "api_key": resolved.api_key_for_request(),
    }
    key = fields["api_key"]
    typed = "api_key" in keys and isinstance(key, str) and not key.startswith(KEY_REF_PREFIX)
    try:
        link.request("bind" if typed else "check", fields)
    except LLMError:
        restore_settings(before)
        raise


def rlm_show(line: str = "") -> Table:
    """`%rlm show`: the resolved configuration and where each value came from (the key only as yes/no)."""
    try:
        config = load_config()
    except ConfigError as exc:
        settings = get_settings()
        rows = [(k, v, "%rlm set") for k, v in settings.items()]
        return Table(
            "LLM configuration (invalid)", ["setting", "value", "source"], rows, note=f"error: {exc}"
        )
    sources = config.sources
    rows = []
    for key, value in config.as_display().items():
        rows.append((key, value, sources.get(key, "")))
    path = config_path()
    note = f"config file: {path} ({'read' if path.is_file() else 'not present'})"
    return Table("LLM configuration", ["setting", "value", "source"], rows, note=note)


def providers_table() -> Table:
    """One row per provider: configured yes/no, models per tier, and which one is active."""
    try:
        config = load_config()
        active, error = config.provider, ""
    except ConfigError as exc:
        config, active, error = None, None, str(exc)
    rows = []
    for name in PROVIDERS:
        if config is not None and name == config.provider:
            models = config.models
            configured = "yes"
        else:
            models = DEFAULT_MODELS.get(name, {})
            if name == "local":
                models = dict.fromkeys(TIERS, _local_model_name(config.local_model if config else "tiny"))
                configured = _local_status()
            else:
                configured = "yes" if provider_key_present(name) else f"no (set {PROVIDER_KEY_ENV[name]})"
        rows.append(
            (
                "▶ " + name if name == active else name,
                configured,
                *(models.get(t) or "—" for t in TIERS),
                config.base_url
                if config is not None and name == active
                else DEFAULT_BASE_URLS.get(name, "local"),
            )
        )
    note = f"active: {active}" if active else f"no usable configuration: {error}"
    if active == "local":  # the same words whether or not the [local] extra is installed (see "configured")
        from rlm_kernel.llm.local_models import LOCAL_MODELS

        note = f"{note} — {LOCAL_MODELS[config.local_model].note}"  # names the active model and its size
    return Table("LLM providers", ["provider", "configured", *TIERS, "base URL"], rows, note=note)


def _local_status() -> str:
    from rlm_kernel.llm.local import local_model_available  # llm.local imports llm.config: not at the top

    return "yes (offline model)" if local_model_available() else "no (install the offline model's extra)"


def rlm_providers(line: str = "") -> Table:
    """`%rlm providers`: the providers table."""
    return providers_table()


def register() -> None:
    """Register the subcommands with the kernel's `%rlm`."""
    register_rlm_subcommand("set", rlm_set, "set an LLM setting for this session: %rlm set key=value")
    register_rlm_subcommand("show", rlm_show, "show the LLM configuration (keys only as present yes/no)")
    register_rlm_subcommand(
        "providers", rlm_providers, "list LLM providers, their models per tier, the active one"
    )


register()
