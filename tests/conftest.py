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
def _process_limits_given_back():
    """In-process tests run cells under `cell_limits`, which arms process-wide limits (the CPU timer and
    its handler, RLIMIT_CPU's soft limit as a backstop). One left armed kills the pytest process later
    (SIGXCPU) or cancels unrelated code, so a test that leaves them changed fails here, and the next test
    starts clean."""
    import resource
    import signal

    def state() -> tuple:
        return (
            signal.getitimer(signal.ITIMER_PROF),
            signal.getsignal(signal.SIGPROF),
            resource.getrlimit(resource.RLIMIT_CPU),
        )

    saved = state()
    yield
    left = state()
    if left != saved:
        signal.setitimer(signal.ITIMER_PROF, *saved[0])
        signal.signal(signal.SIGPROF, saved[1] if saved[1] is not None else signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CPU, saved[2])
        pytest.fail(f"the test left process limits changed: (timer, handler, RLIMIT_CPU) {saved} -> {left}")
