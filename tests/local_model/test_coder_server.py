"""The coder model for real: the 22 part wheels joined, verified, served by xllamacpp, writing REPL code.

Marked `local_model`, and skipped unless the `[local-coder]` extra is installed (CI never does: 1.1 GB).
Run with `pytest -m local_model tests/local_model/test_coder_server.py`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import httpx
import pytest

from rlm_kernel.llm import LLMSession, coder_model, local

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def model_session() -> Iterator[LLMSession]:
    """One LLM session for the module's tests: they share its server."""
    session = LLMSession()
    yield session
    session.close()  # stops the server


@pytest.fixture(scope="module")
def coder_url(model_session: LLMSession):
    if not coder_model.coder_parts_installed():
        pytest.skip(f"the coder model is not installed: {coder_model.INSTALL_HINT}")
    return local.ensure_local_server("coder", session=model_session)


def test_joined_file_is_the_official_one() -> None:
    if not coder_model.coder_parts_installed():
        pytest.skip(f"the coder model is not installed: {coder_model.INSTALL_HINT}")
    path = coder_model.coder_gguf()
    assert path.stat().st_size == coder_model.CODER_SIZE
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 23):
            digest.update(chunk)
    assert digest.hexdigest() == coder_model.CODER_SHA256


def test_coder_writes_code_through_the_runtime(coder_url: str, model_session: LLMSession) -> None:
    server = local.local_server(model_session)
    assert server is not None and server.key == "coder"
    models = httpx.get(f"{coder_url}/models", timeout=10).json()
    assert "qwen2.5-coder-1.5b-instruct" in [m["id"] for m in models["data"]]
    body = {
        "model": "qwen2.5-coder-1.5b-instruct",
        "messages": [
            {
                "role": "user",
                "content": "Write one Python expression that counts the lines containing 'ERROR' in the "
                "string variable `context`. Only the code.",
            }
        ],
        "max_tokens": 60,
        "temperature": 0,
    }
    data = httpx.post(f"{coder_url}/chat/completions", json=body, timeout=900).json()
    text = data["choices"][0]["message"]["content"]
    assert "context" in text and "ERROR" in text, text
