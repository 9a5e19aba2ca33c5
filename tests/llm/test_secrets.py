"""A planted key never appears in errors (chained or not), reprs, warnings, events or logs."""

from __future__ import annotations

import logging
import string
import traceback
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlm_kernel.llm import LLMError, load_config
from rlm_kernel.llm.events import CallEvent, bus
from rlm_kernel.llm.redact import forget_secret, redact, register_secret
from tests.llm.conftest import PLANTED_KEY, MakeClient
from tests.llm_server import Fault, LLMTestServer


def _all_text(exc: BaseException) -> str:
    parts = ["".join(traceback.format_exception(exc)), repr(exc), str(exc), repr(vars(exc))]
    chained = exc.__cause__ or exc.__context__
    while chained is not None:
        parts.append("".join(traceback.format_exception(chained)))
        chained = chained.__cause__ or chained.__context__
    return "\n".join(parts)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_key_never_leaks(
    provider: str, make_client: MakeClient, llm_server: LLMTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[CallEvent] = []
    unsubscribe = bus.subscribe(events.append)
    caplog.set_level(logging.DEBUG)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client = make_client(provider, model=f"unpriced-{provider}")
            assert PLANTED_KEY not in repr(client) and PLANTED_KEY not in repr(client.config)
            assert PLANTED_KEY not in str(client.config.as_display())
            client.complete("answered")  # an answered call of an unpriced model: the price warning
            llm_server.queue(Fault.unauthorized(echo_key=True))  # the server repeats the key in its message
            with pytest.raises(LLMError) as info:
                client.complete("hi")
            text = _all_text(info.value)
            assert "Incorrect API key provided" in text
            assert PLANTED_KEY not in text
            assert info.value.__cause__ is None and info.value.__context__ is None
            llm_server.queue(
                Fault.http(500, body=f'{{"error": {{"message": "upstream saw {PLANTED_KEY}"}}}}')
            )
            llm_server.queue(
                Fault.http(500, body=f'{{"error": {{"message": "upstream saw {PLANTED_KEY}"}}}}')
            )
            llm_server.queue(
                Fault.http(500, body=f'{{"error": {{"message": "upstream saw {PLANTED_KEY}"}}}}')
            )
            with pytest.raises(LLMError) as info2:
                client.complete("again")
            assert PLANTED_KEY not in _all_text(info2.value)
            llm_server.stop()
            with pytest.raises(LLMError) as info3:
                make_client(provider, max_retries=0).complete("down")
            assert PLANTED_KEY not in _all_text(info3.value)
    finally:
        unsubscribe()
    assert caught, "the unknown-price warning should have been issued"
    assert all(PLANTED_KEY not in str(w.message) for w in caught)
    assert all(PLANTED_KEY not in repr(e) for e in events)
    assert PLANTED_KEY not in caplog.text


def test_redact_patterns() -> None:
    samples = {
        "Authorization: Bearer abcdefghijklmnop": "abcdefghijklmnop",
        "{'x-api-key': 'anthropic-secret-value'}": "anthropic-secret-value",
        "GET /v1beta/models/m:generateContent?key=AIzaSyA1234567890abcdefghijklmnop": "AIzaSyA1234567890",
        "token sk-proj-ABCDEFGHIJKLMNOPQRSTUV here": "sk-proj-ABCDEFGHIJKLMNOPQRSTUV",
        "hf_abcdefghijklmnopqrstuvwxyz": "hf_abcdefghijklmnopqrstuvwxyz",
    }
    for text, secret in samples.items():
        assert secret not in redact(text), text


def test_config_never_shows_key() -> None:
    config = load_config(
        environ={"RLM_BASE_URL": "http://127.0.0.1:1/v1", "RLM_API_KEY": "key-that-is-long-enough"}
    )
    assert config.has_api_key
    assert "key-that-is-long-enough" not in repr(config) and "api_key=<set>" in repr(config)
    assert config.as_display()["api_key"] == "yes"


def test_url_credentials_are_hidden() -> None:
    config = load_config(environ={"RLM_BASE_URL": "https://bob:hunter2-password@proxy.example/v1"})
    assert "hunter2-password" not in repr(config) and "hunter2-password" not in str(config.as_display())
    assert redact("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"


@given(
    key=st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=12, max_size=64),
    before=st.text(max_size=40),
    after=st.text(max_size=40),
)
@settings(max_examples=200, deadline=None)
def test_registered_keys_never_survive_redaction(key: str, before: str, after: str) -> None:
    register_secret(key)
    try:
        assert key not in redact(before + key + after)
        assert key not in redact(f"Authorization: Bearer {key}")
    finally:
        forget_secret(key)  # keep the session's registry to the keys other tests planted
