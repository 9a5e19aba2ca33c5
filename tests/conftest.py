"""Shared pytest fixtures: the local LLM test server and a real `rlm` kernel.

Fixture implementations live in `tests/llm_server.py` and `tests/kernel_client.py`; they are registered here.
"""

pytest_plugins = ["tests.llm_server", "tests.kernel_client"]
