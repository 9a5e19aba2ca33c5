"""Which key may go to which endpoint: fixed from the broker's environment at start, plus keys typed in cells.

An endpoint is (base URL, proxy). At start the broker records every endpoint the configuration names (the
resolved default, each provider's official URL whose own key is set, OPENAI_BASE_URL, the local model) with
the key bound to it. A key typed with `%rlm set api_key=...` is bound to the endpoint set with it, which must
be one of those or a provider's official URL. A request to any other endpoint is refused before anything is
sent: the kernel has no network of its own, and the broker is not its way to other hosts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from rlm_kernel.broker.start_config import StartConfig
from rlm_kernel.handover import KEY_REF_PREFIX
from rlm_kernel.llm.config import (
    CACHE_MODES,
    DEFAULT_BASE_URLS,
    PROVIDER_KEY_ENV,
    PROVIDERS,
    LLMConfig,
    _provider_key,
    _secret_lookup,
    load_config,
)
from rlm_kernel.llm.errors import ConfigError
from rlm_kernel.llm.redact import redact, register_secret

__all__ = ["Endpoint", "EndpointPolicy", "EndpointRefused"]


class EndpointRefused(ConfigError):
    """A request or setting names an endpoint that no key was configured for at start."""


def _norm(url: str | None) -> str | None:
    return None if not url else url.strip().rstrip("/")


@dataclass(frozen=True)
class Endpoint:
    """Where a call goes: base URL (None: the local model the broker starts) and proxy."""

    base_url: str | None
    proxy: str | None

    @classmethod
    def of(cls, base_url: str | None, proxy: str | None) -> Endpoint:
        return cls(_norm(base_url), _norm(proxy))

    def describe(self) -> str:
        url = redact(self.base_url) if self.base_url else "the local model"
        return f"{url}" + (f" through proxy {redact(self.proxy)}" if self.proxy else "")


class EndpointPolicy:
    """The broker's table endpoint → key (None: configured without a key)."""

    def __init__(self) -> None:
        self._configured: dict[Endpoint, str | None] = {Endpoint(None, None): None}
        self._typed: dict[Endpoint, str] = {}
        self._official: set[Endpoint] = {Endpoint.of(url, None) for url in DEFAULT_BASE_URLS.values()}
        """Each provider's official URL (through the start-time proxy): a typed key may go there too."""

    @classmethod
    def from_environment(cls) -> EndpointPolicy:
        """The endpoints the environment (and config file) of this process configure."""
        policy = cls()
        try:
            start = load_config(use_settings=False)
        except ConfigError:
            start = None
        proxy = start.proxy if start is not None else None
        policy._official = {Endpoint.of(url, proxy) for url in DEFAULT_BASE_URLS.values()}
        if start is not None:
            policy._configured[Endpoint.of(start.base_url, start.proxy)] = start.api_key_for_request()
            if start.base_url is None:
                policy._configured[Endpoint(None, _norm(start.proxy))] = None
        secret = _secret_lookup(os.environ, False)
        for provider in PROVIDER_KEY_ENV:
            key, _name = _provider_key(provider, secret)
            if key:
                register_secret(key)
                policy._configured.setdefault(Endpoint.of(DEFAULT_BASE_URLS[provider], proxy), key)
        base = os.environ.get("OPENAI_BASE_URL")
        okey, _ = _provider_key("openai", secret)
        if base:  # named at start: its key, or one typed in a cell
            policy._configured.setdefault(Endpoint.of(base, proxy), okey or None)
        return policy

    def configured(self) -> list[str]:
        """The configured endpoints, for display (no keys)."""
        return sorted(e.describe() for e in self._configured)

    def bind_typed(self, endpoint: Endpoint, key: str) -> None:
        """Bind a key typed in a cell to the endpoint set with it — one configured at start or a provider's
        official URL: the kernel has no network of its own, so a key of its choosing must not turn the
        broker into its way to any host (`EndpointRefused` otherwise)."""
        if endpoint not in self._configured and endpoint not in self._official:
            raise EndpointRefused(
                f"refused: {endpoint.describe()} was not configured when the kernel started, so no request "
                "goes there, with a typed key or any other (the kernel reaches the network only through the "
                "LLM broker, and only where its start-time configuration points). Name the endpoint at start "
                "(RLM_BASE_URL / RLM_PROXY in the environment, the kernelspec env or the config file), then "
                "type its key with `%rlm set api_key=...`",
                key="base_url",
            )
        register_secret(key)
        self._typed[endpoint] = key

    def resolve(self, endpoint: Endpoint, presented: str | None) -> str | None:
        """The key to send to `endpoint` for a request presenting `presented` (a reference, a typed key or
        None); raises `EndpointRefused` when the endpoint was not configured for it."""
        if presented is not None and not presented.startswith(KEY_REF_PREFIX):
            if self._typed.get(endpoint) == presented:
                return presented
            raise EndpointRefused(
                f"refused: the api_key set in this session was not given for {endpoint.describe()}; "
                "a typed key goes only to the endpoint set with it — set the key and the base_url together "
                "in one `%rlm set`, or unset the key (an empty api_key)",
                key="api_key",
            )
        if endpoint in self._configured:
            return self._configured[endpoint] if presented is not None else None
        raise EndpointRefused(
            f"refused: {endpoint.describe()} was not configured when the kernel started, so no request goes "
            "there (a configured API key must not reach an endpoint it was not set for). Configure the "
            "endpoint at start (RLM_BASE_URL / RLM_PROXY in the environment, the kernelspec env or the "
            "config file), or give it a key of its own: api_key and base_url together in one `%rlm set`",
            key="base_url",
        )

    def config_for(self, fields: dict[str, Any], start: StartConfig) -> LLMConfig:
        """An `LLMConfig` for an engine the kernel describes (`fields`), with the key this policy allows and
        what the start-time configuration bounds (`start`: cache place, prices, traffic numbers)."""
        base_url, proxy = fields.get("base_url"), fields.get("proxy")
        if not all(v is None or isinstance(v, str) for v in (base_url, proxy)):
            raise ConfigError("the broker needs base_url and proxy as text", key="base_url")
        presented = fields.get("api_key")
        if not (presented is None or isinstance(presented, str)):
            raise ConfigError("the broker needs the api_key as text or a key reference", key="api_key")
        key = self.resolve(Endpoint.of(base_url, proxy), presented)
        cache = fields.get("cache")
        if cache not in CACHE_MODES:
            modes = ", ".join(CACHE_MODES)
            raise ConfigError(f"the broker refused cache={cache!r}: one of {modes}", key="cache")
        provider = fields.get("provider")
        if provider not in PROVIDERS:
            raise ConfigError(f"the broker refused provider={provider!r}", key="provider")
        return LLMConfig(
            provider=provider,
            base_url=base_url,
            models={},
            **start.traffic(fields),
            cache=cache,
            cache_dir=start.cache_dir_for(fields.get("cache_dir")) if cache != "off" else "",
            proxy=proxy,
            prices=start.prices_for(fields.get("prices")),
            _api_key=key,
        )
