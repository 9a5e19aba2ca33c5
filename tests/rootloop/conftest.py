"""Fixtures for root-loop tests: the real client on the local test server (shared with tests/repl), and one
rlm kernel per test module on that server (`served`, `kernel`; modules needing another environment define
their own)."""

from collections.abc import Iterator

import pytest

from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import (
    client_on_server,  # noqa: F401 - re-exported fixture
    llm_env,
)

PRICES = '[prices]\n"test-model" = {input = 0.0, output = 10.0}\n'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    config = tmp_path_factory.mktemp("config") / "rlm.toml"
    config.write_text(PRICES)
    with kernel_with_llm_server(lambda server: {**llm_env(server), "RLM_CONFIG": str(config)}) as served:
        yield served


@pytest.fixture
def kernel(served: tuple[LLMTestServer, KernelHarness]) -> KernelHarness:
    served[0].reset()
    return served[1]
