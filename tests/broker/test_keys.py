"""The kernel process never holds a key; the broker does; a key goes only where it was configured to go."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from tests.broker.procs import broker_pids, memory_contains
from tests.kernel_client import KernelHarness
from tests.llm_server import LLMTestServer

PLANTED = "sk-planted-" + secrets.token_hex(16)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[LLMTestServer, LLMTestServer, LLMTestServer]]:
    with LLMTestServer() as a, LLMTestServer() as b, LLMTestServer() as c:
        yield a, b, c


@pytest.fixture(scope="module")
def kernel(servers: tuple[LLMTestServer, ...]) -> Iterator[KernelHarness]:
    a = servers[0]
    env = {"RLM_BASE_URL": a.openai_base_url, "OPENAI_API_KEY": PLANTED, "RLM_MODEL": "m", "RLM_CACHE": "off"}
    harness = KernelHarness(env=env, remove_env=("RLM_CONFIG", "RLM_API_KEY", "RLM_PROVIDER"))
    try:
        yield harness
    finally:
        harness.shutdown()


@pytest.fixture(autouse=True)
def _fresh(servers: tuple[LLMTestServer, ...]) -> None:
    for s in servers:
        s.reset()


def test_memory_of_kernel_has_no_key_and_broker_has_it(kernel: KernelHarness, servers: tuple) -> None:
    a = servers[0]
    ex = kernel.execute('answers = llm_query_batched(["one", "two"]); answers')
    assert ex.ok, ex
    assert {r.headers.get("Authorization") for r in a.requests} == {f"Bearer {PLANTED}"}
    pid = kernel.km.provisioner.process.pid
    brokers = broker_pids(pid)
    assert brokers, "no broker process found under the kernel"
    needle = PLANTED.encode()
    assert not memory_contains(pid, needle), "the key is in the kernel process's memory"
    assert any(memory_contains(b, needle) for b in brokers), "the key is not in the broker's memory"
    assert needle not in open(f"/proc/{pid}/environ", "rb").read()


def test_unconfigured_base_url_or_proxy_is_refused(kernel: KernelHarness, servers: tuple) -> None:
    a, b, _c = servers
    for setting in (
        f"base_url={b.openai_base_url}",
        f"proxy={b.base_url}",
        f"provider=gemini proxy={b.base_url}",
    ):
        ex = kernel.execute(f"%rlm set {setting}")
        assert not ex.ok and "refused" in ex.all_text and "not configured" in ex.all_text, ex
        ok = kernel.execute('llm_query("still here")')
        assert ok.ok and "still here" in ok.all_text, ok  # the refused setting was rolled back
    assert b.requests == []
    assert [r.last_user for r in a.requests] == ["still here"] * 3
    assert "gemini" not in kernel.execute("%rlm show").all_text.split("provider", 1)[1].split("\n", 1)[0]


def test_a_typed_key_goes_only_to_the_endpoint_set_with_it(servers: tuple) -> None:
    a, b, c = servers
    # b is named at start without a key of its own; a is OPENAI_BASE_URL with the environment's key
    harness = KernelHarness(
        env={
            "RLM_BASE_URL": b.openai_base_url,
            "OPENAI_BASE_URL": a.openai_base_url,
            "OPENAI_API_KEY": PLANTED,
            "RLM_MODEL": "m",
            "RLM_CACHE": "off",
        },
        remove_env=("RLM_CONFIG", "RLM_API_KEY", "RLM_PROVIDER"),
    )
    try:
        ex = harness.execute(
            f'%rlm set api_key=typed-key-123 base_url={b.openai_base_url}\nllm_query("to b")'
        )
        assert ex.ok, ex
        assert [r.headers.get("Authorization") for r in b.requests] == ["Bearer typed-key-123"]
        moved = harness.execute(f"%rlm set base_url={c.openai_base_url}")
        assert not moved.ok and "refused" in moved.all_text
        back = harness.execute(f"%rlm set base_url={a.openai_base_url}")  # the typed key was not given for A
        assert not back.ok and "typed key goes only" in back.all_text, back
        assert harness.execute(f"%rlm set api_key= base_url={a.openai_base_url}").ok
        again = harness.execute('llm_query("to a")')
        assert again.ok, again
        assert c.requests == []
        assert [r.headers.get("Authorization") for r in a.requests] == [f"Bearer {PLANTED}"]
    finally:
        harness.shutdown()


def test_a_typed_key_never_opens_an_endpoint_not_named_at_start(
    kernel: KernelHarness, servers: tuple
) -> None:
    """The kernel has no network of its own: a key it types must not make the broker its way to any host."""
    _a, b, _c = servers
    ex = kernel.execute(f"%rlm set api_key=typed-key-123 base_url={b.openai_base_url}")
    assert not ex.ok and "not configured when the kernel started" in ex.all_text, ex
    assert kernel.execute('llm_query("still at a")').ok  # the refused setting was rolled back
    assert b.requests == []


def test_a_key_in_the_config_file_is_only_a_reference_in_the_kernel(
    servers: tuple, tmp_path_factory: pytest.TempPathFactory
) -> None:
    a = servers[0]
    key = "sk-file-" + secrets.token_hex(16)
    config = tmp_path_factory.mktemp("cfg") / "config.toml"
    lines = [f'base_url = "{a.openai_base_url}"', f'api_key = "{key}"', 'model = "m"', 'cache = "off"']
    config.write_text("\n".join(lines) + "\n")
    harness = KernelHarness(
        env={"RLM_CONFIG": str(config)},
        remove_env=("RLM_BASE_URL", "RLM_API_KEY", "OPENAI_API_KEY", "RLM_PROVIDER", "RLM_MODEL"),
    )
    try:
        ex = harness.execute('llm_query("from the file")')
        assert ex.ok, ex
        assert a.requests[-1].headers.get("Authorization") == f"Bearer {key}"
        shown = harness.execute("%rlm show").all_text
        assert "config file" in shown and key not in shown
    finally:
        harness.shutdown()
