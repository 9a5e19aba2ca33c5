"""Unit tests of the shell's configuration helpers (no kernel).

Limits given through traitlets (`RLMShell.sandbox_limits`) override the RLM_* environment variables.
"""

from __future__ import annotations

import pytest

from rlm_kernel.shell import _limits_from_config


def test_traitlets_limits_override_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLM_CPU_SECONDS", "99")
    monkeypatch.setenv("RLM_OUTPUT_BYTES", "1234")
    limits = _limits_from_config({"cpu_seconds": "7.5", "max_range": "1000"})
    assert limits.cpu_seconds == 7.5
    assert limits.max_range == 1000 and isinstance(limits.max_range, int)
    assert limits.output_bytes == 1234


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"cpu_secs": 1}, "unknown limit(s) cpu_secs"),
        ({"cpu_seconds": "lots"}, "is not a number"),
        ({"memory_mb": -1}, "is negative"),
    ],
)
def test_bad_traitlets_limits_are_explained(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _limits_from_config(overrides)
