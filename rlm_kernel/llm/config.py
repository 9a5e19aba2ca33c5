"""LLM configuration: explicit arguments → `%rlm set` settings → environment → TOML file → defaults.

`load_config()` resolves one `LLMConfig`; invalid values raise `ConfigError` naming the key and its source.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlm_kernel.handover import key_ref
from rlm_kernel.llm.errors import ConfigError
from rlm_kernel.llm.local_models import LOCAL_MODELS
from rlm_kernel.llm.redact import redact, register_secret
from rlm_kernel.llm.schema import (
    BUDGET_DIMS,
    CACHE_MODES,
    LLM_SETTINGS,
    PROVIDERS,
    TIERS,
)
from rlm_kernel.llm.session import LLMSession, current_session
from rlm_kernel.private_files import DEFAULT_CACHE_DIR, default_cache_dir
from rlm_kernel.sandbox.roots import START_DIR
from rlm_kernel.secrets import get_secret
from rlm_kernel.settings_file import config_path, snapshot_at_start

__all__ = [
    "CACHE_MODES",
    "DEFAULT_BASE_URLS",
    "DEFAULT_MODELS",
    "PROVIDERS",
    "SETTINGS",
    "TIERS",
    "LLMConfig",
    "config_path",
    "load_config",
    "notebook_dir",
    "resolve_dir",
    "start_cache_dir",
    "provider_key_present",
    "register_setting",
]

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com/v1beta",
}
DEFAULT_MODELS: dict[str, dict[str, str]] = {
    "openai": {"fast": "gpt-4.1-nano", "balanced": "gpt-4.1-mini", "powerful": "gpt-4.1"},
    "anthropic": {
        "fast": "claude-3-5-haiku-latest",
        "balanced": "claude-sonnet-4-0",
        "powerful": "claude-opus-4-1",
    },
    "gemini": {"fast": "gemini-2.5-flash-lite", "balanced": "gemini-2.5-flash", "powerful": "gemini-2.5-pro"},
}
PROVIDER_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
_KEY_ALIASES = {"GEMINI_API_KEY": ("GEMINI_API_KEY", "GOOGLE_API_KEY")}  # google-genai reads both


def _provider_key(provider: str, secret: Callable[[str], str | None]) -> tuple[str | None, str | None]:
    """(key, variable name) for a provider's own key variable, or (None, None)."""
    name = PROVIDER_KEY_ENV.get(provider)
    for candidate in _KEY_ALIASES.get(name, (name,)) if name else ():
        value = secret(candidate)
        if value:
            return value, candidate
    return None, None


# key → (parser, default, what a valid value is), from the schema; other parts may add keys (register_setting)
SETTINGS: dict[str, tuple[Callable[[Any], Any], Any, str]] = {
    s.name: (s.parse, s.default, s.what) for s in LLM_SETTINGS
}
# TOML tables that map onto flat keys
_TOML_TABLES = {
    "models": {
        "fast": "model_fast",
        "balanced": "model_balanced",
        "powerful": "model_powerful",
        "default": "model",
        "root": "root_model",
    },
    "budget": {d.limit: d.setting for d in BUDGET_DIMS},
}


_EXTRA_KEYS: list[str] = []
_NOT_IN_ENV = frozenset(s.name for s in LLM_SETTINGS if not s.env)
_FIELDS = tuple(s for s in LLM_SETTINGS if s.field)  # LLMConfig's plain fields, in `%rlm show` order


def register_setting(key: str, parser: Callable[[Any], Any], default: Any, what: str) -> None:
    """Add a setting owned by another part of the kernel (e.g. `display`): it is then accepted by `%rlm set`,
    `RLM_<KEY>` and the TOML file, resolved in the same order, and found in `LLMConfig.extra[key]`.

    `parser` turns a raw value into the setting's value or raises ValueError; `what` says what is valid.
    Registering a key twice is a no-op; the LLM layer's own keys cannot be replaced.
    """
    if key in SETTINGS:
        return
    SETTINGS[key] = (parser, default, what)
    _EXTRA_KEYS.append(key)


def _unknown(key: str, source: str) -> ConfigError:
    close = difflib.get_close_matches(key, list(SETTINGS), n=1)
    hint = f" — did you mean {close[0]!r}?" if close else ""
    return ConfigError(
        f"unknown LLM setting {key!r} (from {source}){hint}; known settings: {', '.join(SETTINGS)}",
        key=key,
        source=source,
    )


def _parse(key: str, value: Any, source: str) -> Any:
    if key not in SETTINGS:
        raise _unknown(key, source)
    parser, _default, what = SETTINGS[key]
    try:
        return parser(value)
    except (ValueError, TypeError, KeyError):
        shown = "<hidden>" if key == "api_key" else repr(value)
        raise ConfigError(
            f"invalid LLM setting {key!r} = {shown} (from {source}): expected {what}", key=key, source=source
        ) from None


# ---- where relative paths in the settings are taken from
_START_DIR = START_DIR  # the kernel's working directory at start (the notebook's directory)
SESSION_ENV = "JPY_SESSION_NAME"  # set by jupyter_server (JupyterLab, Notebook 7): the notebook's path


def notebook_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The notebook's directory, against which relative paths in the settings (`cache_dir`) are resolved.

    Where the notebook is, as JupyterLab and Notebook 7 tell the kernel (`$JPY_SESSION_NAME`, its absolute
    path); elsewhere (nbclient, nbconvert, papermill, VS Code, jupyter console) the kernel's working directory
    at start, which those frontends set to the notebook's directory (papermill: with `--cwd`).
    """
    env = os.environ if environ is None else environ
    session = env.get(SESSION_ENV, "")
    if session and os.path.isabs(session):
        parent = Path(session).parent
        if parent.is_dir():
            return parent.resolve()
    return _START_DIR


def resolve_dir(raw: str, environ: Mapping[str, str] | None = None) -> Path:
    """`raw` (`~` expanded) as an absolute path; a relative one is taken from the notebook's directory."""
    path = Path(raw).expanduser()
    return (path if path.is_absolute() else notebook_dir(environ) / path).resolve()


# ---- sources
def _read_toml(environ: Mapping[str, str]) -> tuple[dict[str, Any], str]:
    path = config_path(environ)
    source = f"config file {path}"
    snap = snapshot_at_start(path)  # a kernel with a broker: the launcher's copy, the key as a reference
    if snap is not None and "error" in snap:
        raise ConfigError(f"cannot read {source}: {snap['error']}", source=source)
    if snap is None and not path.is_file() or snap is not None and "data" not in snap:
        if environ.get("RLM_CONFIG"):
            raise ConfigError(
                f"RLM_CONFIG points at {path}, which is not a file; fix or unset it", key="RLM_CONFIG"
            )
        return {}, source
    if snap is not None:
        data = snap["data"]
    else:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read {source}: {exc}", source=source) from None
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TOML_TABLES and isinstance(value, dict):
            for sub, sub_value in value.items():
                target = _TOML_TABLES[key].get(sub)
                if target is None:
                    raise _unknown(f"{key}.{sub}", source)
                flat[target] = sub_value
        else:
            flat[key] = value
    return {k: _parse(k, v, source) for k, v in flat.items()}, source


def _secret_lookup(environ: Mapping[str, str], use_store: bool) -> Callable[[str], str | None]:
    def get(name: str) -> str | None:
        if use_store:
            value = get_secret(name)
            if value:
                return value
        value = environ.get(name)
        return value or None

    return get


def _read_env(environ: Mapping[str, str], secret: Callable[[str], str | None]) -> dict[str, tuple[Any, str]]:
    out: dict[str, tuple[Any, str]] = {}
    for key in SETTINGS:
        if key in _NOT_IN_ENV:
            continue
        name = "RLM_" + key.upper()
        raw = secret(name) if key == "api_key" else environ.get(name)
        if raw is not None and str(raw).strip():
            out[key] = (_parse(key, raw, f"environment variable {name}"), f"env {name}")
    return out


def provider_key_present(provider: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a provider-specific key (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY) is available."""
    env = os.environ if environ is None else environ
    return _provider_key(provider, _secret_lookup(env, environ is None))[0] is not None


# ---- the resolved configuration
@dataclass(frozen=True)
class LLMConfig:
    """A resolved configuration. `sources[key]` tells where each value came from. The key is private."""

    provider: str
    base_url: str | None
    models: dict[str, str | None]
    root_model: str = "powerful"
    concurrency: int = 16
    max_connections: int = 100
    max_retries: int = 4
    timeout: float = 120.0
    connect_timeout: float = 10.0
    retry_after_cap: float = 60.0
    max_tokens: int = 1024
    temperature: float = 0.0
    auto_fast_max_tokens: int = 8000
    cache: str = "readwrite"
    cache_dir: str = DEFAULT_CACHE_DIR
    proxy: str | None = None
    local_model: str = "tiny"
    errors_in_model_code: str = "raise"
    budget_limits: dict[str, float | int] = field(default_factory=dict)
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    _api_key: str | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        key = "<set>" if self._api_key else "<not set>"
        url = redact(self.base_url) if self.base_url else None
        return (
            f"LLMConfig(provider={self.provider!r}, base_url={url!r}, models={self.models!r}, "
            f"api_key={key}, concurrency={self.concurrency}, cache={self.cache!r})"
        )

    @property
    def has_api_key(self) -> bool:
        """Whether an API key is configured (the key itself is never exposed)."""
        return bool(self._api_key)

    def api_key_for_request(self) -> str | None:
        """The key, for the transport only (used inside the LLM layer; never shown)."""
        return self._api_key

    def as_display(self) -> dict[str, Any]:
        """Plain values for `%rlm show`: every shown setting in the schema's order (the key only as present
        yes/no, URLs redacted, budget limits only where set), then the settings other parts registered."""
        shown: dict[str, Any] = {}
        for setting in LLM_SETTINGS:
            if setting.shown:
                shown.update(self._shown(setting.name))
        return {**shown, **self.extra}

    def _shown(self, key: str) -> dict[str, Any]:
        if key == "base_url":
            local = "(started on first call)" if self.provider == "local" else None
            return {key: redact(self.base_url) if self.base_url else local}
        if key == "api_key":
            return {key: "yes" if self._api_key else "no"}
        if key.startswith("model_"):
            return {key: self.models.get(key[len("model_") :])}
        if key.startswith("budget_"):
            limit = key[len("budget_") :]
            return {key: self.budget_limits[limit]} if limit in self.budget_limits else {}
        if key == "proxy":
            return {key: redact(self.proxy) if self.proxy else None}
        return {key: getattr(self, key)}


def load_config(
    *,
    environ: Mapping[str, str] | None = None,
    use_settings: bool = True,
    session: LLMSession | None = None,
    **explicit: Any,
) -> LLMConfig:
    """Resolve the configuration: explicit keyword arguments → `%rlm set` → environment → TOML → defaults.

    `environ` replaces `os.environ` (and then the kernel's secret store is not consulted) — for tests.
    `session` (default: the current one) gives the `%rlm set` settings and tells whether a broker holds
    the keys.
    Raises `ConfigError` naming the bad key and its source.
    """
    env = os.environ if environ is None else environ
    secret = _secret_lookup(env, environ is None)
    layers: list[tuple[dict[str, Any], str]] = []
    layers.append(
        ({k: _parse(k, v, "explicit argument") for k, v in explicit.items() if v is not None}, "explicit")
    )
    s = session or current_session()
    if use_settings:
        with s.lock:
            layers.append((dict(s.settings), "%rlm set"))
    env_values = _read_env(env, secret)
    layers.append(({k: v for k, (v, _s) in env_values.items()}, "env"))
    toml_values, toml_source = _read_toml(env)
    layers.append((toml_values, toml_source))

    sources: dict[str, str] = {}

    def pick(key: str) -> Any:
        for values, name in layers:
            if key in values:
                sources[key] = env_values[key][1] if name == "env" else name
                return values[key]
        return None

    provider = pick("provider")
    base_url = pick("base_url")
    api_key = pick("api_key")
    if api_key is not None and sources.get("api_key", "").startswith("config file"):
        api_key = _file_key(api_key, brokered=s.link is not None)
    if base_url is None and provider in (None, "openai") and env.get("OPENAI_BASE_URL"):
        base_url = _parse("base_url", env["OPENAI_BASE_URL"], "environment variable OPENAI_BASE_URL")
        sources["base_url"] = "env OPENAI_BASE_URL"
    if provider is None:
        if base_url is not None or api_key is not None or secret("OPENAI_API_KEY"):
            provider = "openai"
        elif secret("ANTHROPIC_API_KEY"):
            provider = "anthropic"
        elif _provider_key("gemini", secret)[0]:
            provider = "gemini"
        else:
            provider = "local"
        sources["provider"] = "inferred"
    if api_key is None and provider in PROVIDER_KEY_ENV:
        api_key, key_var = _provider_key(provider, secret)
        if api_key:
            sources["api_key"] = f"env {key_var}"
    if base_url is None and provider in DEFAULT_BASE_URLS:
        base_url = DEFAULT_BASE_URLS[provider]
        sources["base_url"] = "default"
    official = provider in DEFAULT_BASE_URLS and str(base_url).rstrip("/") == DEFAULT_BASE_URLS[provider]
    replay = (pick("cache") or SETTINGS["cache"][1]) == "replay"  # replay never sends: no key needed
    if official and not api_key and not replay:
        names = f"RLM_API_KEY or {PROVIDER_KEY_ENV[provider]}"
        raise ConfigError(
            f"provider {provider!r} at {base_url} needs an API key: set {names} (or `%rlm set api_key=...`)",
            key="api_key",
        )
    register_secret(api_key)

    def value(key: str) -> Any:
        v = pick(key)
        if v is None:
            default = SETTINGS[key][1]
            if default is not None:
                sources.setdefault(key, "default")
            return default
        return v

    models: dict[str, str | None] = {}
    for tier in TIERS:
        chosen = None
        for values, name in layers:
            for key in (f"model_{tier}", "model"):
                if key in values:
                    chosen = values[key]
                    sources[f"model_{tier}"] = env_values[key][1] if name == "env" else name
                    break
            if chosen is not None:
                break
        if chosen is None:
            if provider == "local":
                chosen = _local_model_name(value("local_model"))
                sources[f"model_{tier}"] = "default (local)"
            elif official:
                chosen = DEFAULT_MODELS[provider][tier]
                sources[f"model_{tier}"] = "default"
        models[tier] = chosen

    budget = {d.limit: v for d in BUDGET_DIMS if (v := pick(d.setting)) is not None}
    return LLMConfig(
        provider=provider,
        base_url=base_url,
        models=models,
        **{s.name: value(s.name) for s in _FIELDS if s.name != "cache_dir"},
        cache_dir=_cache_dir(value("cache_dir"), env, sources),
        budget_limits=budget,
        prices=pick("prices") or {},
        extra={k: value(k) for k in _EXTRA_KEYS},
        sources=sources,
        _api_key=api_key,
    )


def start_cache_dir(raw: str | None, environ: Mapping[str, str] | None = None) -> Path:
    """A `cache_dir` value as a folder: the default (`@per-user`) is a per-user folder for the notebook's
    directory, outside the context roots; a relative path is taken from the notebook's directory."""
    if not raw or raw == DEFAULT_CACHE_DIR:
        return default_cache_dir(notebook_dir(environ), environ)
    return resolve_dir(raw, environ)


def _cache_dir(raw: str, env: Mapping[str, str], sources: dict[str, str]) -> str:
    """The cache directory as an absolute path; a relative one is resolved against the notebook's directory
    (not the directory Jupyter was started from), and its source says so."""
    resolved = start_cache_dir(raw, env)
    if raw == DEFAULT_CACHE_DIR:
        where = sources.get("cache_dir", "default")
        sources["cache_dir"] = f"{where}: per user, for the notebook's directory"
        return str(resolved)
    if not Path(raw).expanduser().is_absolute():
        sources["cache_dir"] = f"{sources.get('cache_dir', 'default')}: {raw!r} in the notebook's directory"
    return str(resolved)


def _file_key(key: str, *, brokered: bool) -> str:
    """A config file's key as this process may hold it: in a kernel with an LLM broker, a reference (the
    broker read the same file at start and holds the key), else the key."""
    return key_ref("config file") if brokered else key


def _local_model_name(key: str = "tiny") -> str:
    return LOCAL_MODELS[key].name
