"""Fixtures for the in-process sandbox tests: a session with small limits; canaries in the env and on disk."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlm_kernel.sandbox import Limits, SandboxSession
from tests.sandbox.payloads import CANARY_ENV_VAR, CANARY_VALUE

# In-process limits: short CPU time; no RLIMIT_CPU backstop and no RLIMIT_AS (they would outlive the test
# in the pytest process); those two are tested in subprocesses and through a real kernel.
TEST_LIMITS = dict(
    cpu_seconds=1.0, wall_seconds=30.0, cpu_backstop_seconds=0, memory_mb=0, output_bytes=100_000
)


@pytest.fixture
def session() -> SandboxSession:
    return SandboxSession(Limits(**TEST_LIMITS), seed=1)


@pytest.fixture
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = Path(tmp_path_factory.mktemp("canary")) / "secret.txt"
    path.write_text(f"api_key={CANARY_VALUE}\n")
    old = os.environ.get(CANARY_ENV_VAR)
    os.environ[CANARY_ENV_VAR] = CANARY_VALUE
    try:
        yield str(path)
    finally:
        if old is None:
            os.environ.pop(CANARY_ENV_VAR, None)
        else:
            os.environ[CANARY_ENV_VAR] = old


@pytest.fixture(autouse=True)
def _no_foreign_gc_callbacks() -> Iterator[None]:
    """Cells here run without the gc callback hypothesis registers in the test process (a kernel has none):
    a cell's time limit that fired while GC ran it was reported by pytest as an unraisable exception, whose
    formatting the repeating timer broke again ("Failed to process unraisable exception", op_step-
    merge_many_texts in CI)."""
    saved = list(gc.callbacks)
    gc.callbacks[:] = [cb for cb in saved if "hypothesis" not in (getattr(cb, "__module__", None) or "")]
    try:
        yield
    finally:
        gc.callbacks[:] = saved
