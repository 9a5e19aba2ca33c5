"""The string-evaluation payload families of eval_payloads.py through a real `rlm` kernel.

The kernel has a fake API key in its environment and a secret file within reach; no reply may show either.
After every payload the kernel answers and a variable set before it is still there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_client import KernelHarness
from tests.sandbox.eval_payloads import EVAL_PAYLOADS
from tests.sandbox.payloads import CANARY_ENV_VAR, CANARY_VALUE, Payload, render
from tests.sandbox.test_payloads_kernel import check

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
FILE_TEXT = f"api_key={CANARY_VALUE}"


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = Path(tmp_path_factory.mktemp("canary")) / "secret.txt"
    path.write_text(FILE_TEXT + "\n")
    return str(path)


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelHarness]:
    harness = KernelHarness(env={CANARY_ENV_VAR: CANARY_VALUE, "RLM_CPU_SECONDS": "5"})
    try:
        assert harness.execute("kept = 41").ok
        yield harness
    finally:
        harness.shutdown()


@pytest.mark.parametrize("payload", EVAL_PAYLOADS, ids=[f"{p.category}-{p.id}" for p in EVAL_PAYLOADS])
def test_string_eval_payload_in_kernel(kernel: KernelHarness, secret_file: str, payload: Payload) -> None:
    ex = kernel.execute(render(payload, secret_file), timeout=120)
    text = ANSI.sub("", ex.all_text)
    check(payload, ex.status, ex.error_name, text)
    assert FILE_TEXT not in text
    if ex.error_name == "SandboxError":
        assert "\n" not in ex.error_value, ex.error_value
    after = kernel.execute("kept + 1", timeout=60)
    assert after.ok and after.result == "42", f"kernel state lost after {payload.id}: {after}"
