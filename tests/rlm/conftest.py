"""Fixtures for root-loop tests: the real client on the local test server (shared with tests/repl)."""

from tests.repl.conftest import client_on_server  # noqa: F401 - re-exported fixture
