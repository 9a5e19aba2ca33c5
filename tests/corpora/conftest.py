"""The corpora tests use the REPL tests' LLM fixtures (the real client on the local test server)."""

from tests.repl.conftest import client_on_server  # noqa: F401 - a fixture
