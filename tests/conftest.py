"""Shared pytest fixtures: the local LLM test server and a real `rlm` kernel.

Fixture implementations live in `tests/llm_server.py` and `tests/kernel_client.py`; they are registered here.
"""

pytest_plugins = ["tests.llm_server", "tests.kernel_client"]


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_secret_store():
    """Tests that plant keys in the in-process secret store must not leak them into later tests."""
    from rlm_kernel import secrets

    saved = dict(secrets._store)  # noqa: SLF001 - test isolation of the private store
    try:
        yield
    finally:
        secrets._store.clear()  # noqa: SLF001
        secrets._store.update(saved)  # noqa: SLF001


@pytest.fixture(autouse=True)
def llm_session():
    """Each test runs in its own LLM session (`%rlm set` settings, default client, session budget, event bus):
    nothing carries over between tests, and no test resets module state."""
    from rlm_kernel.llm.session import LLMSession, use_session

    session = LLMSession()
    with use_session(session):
        yield session
    session.close()


@pytest.fixture(autouse=True)
def _restore_cpu_backstop():
    """In-process tests run cells under `cell_limits`, which lowers RLIMIT_CPU's soft limit as a backstop;
    one left lowered (seen after tests/repl/test_batch_failures.py: soft 94 s) kills the whole pytest process
    later with SIGXCPU. Each test starts and ends with the limit the run began with."""
    import resource

    saved = resource.getrlimit(resource.RLIMIT_CPU)
    yield
    if resource.getrlimit(resource.RLIMIT_CPU) != saved:
        resource.setrlimit(resource.RLIMIT_CPU, saved)
