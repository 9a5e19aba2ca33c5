"""Where the OS cannot confine (simulated): the kernel starts and says which layers are missing and why, and
RLM_REQUIRE_CONFINEMENT=1 makes start-up fail with that reason instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from jupyter_client.connect import write_connection_file

from tests.confine.test_os_layer import REASON
from tests.kernel_client import KernelHarness

NO_LANDLOCK = {"RLM_TEST_ONLY_NO_LANDLOCK": "1"}
NO_SECCOMP = {"RLM_TEST_ONLY_NO_SECCOMP": "1"}


@pytest.mark.parametrize("missing", [NO_LANDLOCK, NO_SECCOMP], ids=["no-landlock", "no-seccomp"])
def test_kernel_starts_and_says_which_layer_is_missing(missing: dict[str, str]) -> None:
    with KernelHarness(env=missing) as kernel:
        banner = kernel.kc.kernel_info(reply=True)["content"]["banner"]
        layer = "Landlock" if missing is NO_LANDLOCK else "seccomp"
        assert f"OS layer {layer}: NOT active" in banner and "simulated for tests" in banner, banner
        text = kernel.execute("%rlm security").all_text
        assert "NOT active" in text and "simulated for tests" in text, text
        assert kernel.execute("6 * 7").result == "42"


@pytest.mark.parametrize("missing", [NO_LANDLOCK, NO_SECCOMP], ids=["no-landlock", "no-seccomp"])
def test_required_confinement_refuses_to_start(missing: dict[str, str], tmp_path: Path) -> None:
    connection_file, _ = write_connection_file(str(tmp_path / "kernel.json"))
    env = {**os.environ, **missing, "RLM_REQUIRE_CONFINEMENT": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "rlm_kernel", "-f", connection_file],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "RLM_REQUIRE_CONFINEMENT=1 but OS confinement is incomplete" in proc.stderr
    assert "simulated for tests" in proc.stderr


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_required_confinement_starts_where_the_os_can(tmp_path: Path) -> None:
    with KernelHarness(env={"RLM_REQUIRE_CONFINEMENT": "1"}) as kernel:
        text = kernel.execute("%rlm security").all_text
        assert "NOT active" not in text, text
