"""Installing the kernelspec, running a notebook with nbclient, API keys kept out of the environment.

Uses temporary prefixes only; the real install is done by CI (`rlm-kernel install --sys-prefix`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from rlm_kernel import secrets
from rlm_kernel.install import kernel_json, spec_source_dir
from tests.kernel_client import KernelHarness

RLM_KERNEL = [sys.executable, "-m", "rlm_kernel.install"]


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)


def test_install_and_uninstall_into_prefix(tmp_path: Path) -> None:
    env = {**os.environ, "JUPYTER_PATH": str(tmp_path / "share" / "jupyter")}
    done = _run(
        [
            *RLM_KERNEL,
            "install",
            "--prefix",
            str(tmp_path),
            "--name",
            "rlm-test",
            "--display-name",
            "RLM test",
            "--env",
            "RLM_CPU_SECONDS=7",
        ],
        env,
    )
    assert done.returncode == 0, done.stderr
    spec_dir = tmp_path / "share" / "jupyter" / "kernels" / "rlm-test"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"][1:] == ["-P", "-m", "rlm_kernel", "-f", "{connection_file}"]
    assert spec["display_name"] == "RLM test"
    assert spec["metadata"] == {"debugger": False}
    assert spec["interrupt_mode"] == "signal"
    assert spec["env"] == {"RLM_CPU_SECONDS": "7"}
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (spec_dir / logo).stat().st_size > 100
    listed = _run([sys.executable, "-m", "jupyter_client.kernelspecapp", "list", "--json"], env)
    if listed.returncode == 0:
        assert "rlm-test" in json.loads(listed.stdout)["kernelspecs"]
    done = _run([*RLM_KERNEL, "uninstall", "--name", "rlm-test"], env)
    assert done.returncode == 0, done.stderr
    assert not spec_dir.exists()
    again = _run([*RLM_KERNEL, "uninstall", "--name", "rlm-test"], env)
    assert again.returncode == 1 and "no kernelspec named" in again.stderr


def test_install_writes_the_package_bytecode(tmp_path: Path) -> None:
    """The confined kernel cannot write its own .pyc files: `install` writes them, as pip does for a wheel,
    also when PYTHONDONTWRITEBYTECODE is set (that governs imports, not an explicit install)."""
    import importlib.util

    import rlm_kernel.analysis.heavy as module

    pyc = Path(importlib.util.cache_from_source(module.__file__))
    pyc.unlink(missing_ok=True)
    env = {
        **os.environ,
        "JUPYTER_PATH": str(tmp_path / "share" / "jupyter"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = _run([*RLM_KERNEL, "install", "--prefix", str(tmp_path), "--name", "rlm-pyc"], env)
    assert done.returncode == 0, done.stderr
    assert pyc.is_file() and pyc.stat().st_size > 0


def test_install_rejects_bad_env_and_conflicting_targets(tmp_path: Path) -> None:
    bad = _run([*RLM_KERNEL, "install", "--prefix", str(tmp_path), "--env", "NOVALUE"], dict(os.environ))
    assert bad.returncode != 0 and "NAME=VALUE" in bad.stderr
    both = _run([*RLM_KERNEL, "install", "--user", "--prefix", str(tmp_path)], dict(os.environ))
    assert both.returncode != 0 and "not allowed with" in both.stderr


def test_shipped_kernelspec_matches_install_command() -> None:
    source = spec_source_dir()
    assert source is not None
    shipped = json.loads((source / "kernel.json").read_text())
    built = kernel_json()
    assert shipped["argv"][0] == SHIPPED_INTERPRETER
    assert shipped["argv"][1:] == built["argv"][1:]
    for key in ("display_name", "language", "interrupt_mode", "metadata"):
        assert shipped[key] == built[key], key


SHIPPED_INTERPRETER = "{resource_dir}/../../../../bin/python3"


def test_shipped_kernelspec_starts_the_interpreter_of_its_environment() -> None:
    """The wheel installs the spec at <prefix>/share/jupyter/kernels/rlm; jupyter_client expands
    `{resource_dir}` in argv, so argv[0] is <prefix>/bin/python3 — this environment's interpreter, whichever
    environment the client runs from (a bare `python` would be the client's own, issue 32)."""
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import KernelManager

    source = spec_source_dir()
    assert source is not None
    shipped = json.loads((source / "kernel.json").read_text())
    installed_at = Path(sys.prefix) / "share" / "jupyter" / "kernels" / "rlm"
    manager = KernelManager()
    manager._kernel_spec = KernelSpec(
        resource_dir=str(installed_at), **shipped
    )  # as KernelSpecManager makes it
    argv = manager.format_kernel_cmd()
    interpreter = Path(os.path.normpath(argv[0]))
    assert interpreter == Path(sys.prefix) / "bin" / "python3"
    assert os.access(interpreter, os.X_OK), interpreter
    probe = _run([str(interpreter), "-c", "import sys; print(sys.prefix)"], dict(os.environ))
    assert probe.stdout.strip() == sys.prefix


def test_nbclient_runs_a_notebook_on_rlm() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("words = 'the cat and the hat'.split()\nlen(words)"),
        nbformat.v4.new_code_cell("from collections import Counter\nCounter(words).most_common(1)"),
        nbformat.v4.new_code_cell("print('done')"),
    ]
    client = NotebookClient(nb, kernel_name="rlm", timeout=60, startup_timeout=60)
    client.execute()
    assert nb.cells[0].outputs[0]["data"]["text/plain"] == "5"
    assert nb.cells[1].outputs[0]["data"]["text/plain"] == "[('the', 2)]"
    assert nb.cells[2].outputs[0]["text"] == "done\n"


CANARY = "sk-canary-4f1b2c3d9e8a7b6c"


def test_api_keys_removed_from_kernel_environment(rlm_kernel_factory) -> None:
    harness: KernelHarness = rlm_kernel_factory(
        env={"OPENAI_API_KEY": CANARY, "RLM_API_KEY": CANARY + "-rlm", "ANTHROPIC_API_KEY": CANARY + "-a"}
    )
    assert harness.execute("1 + 1").result == "2"
    pid = harness.km.provisioner.process.pid
    environ = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
    assert CANARY not in environ
    assert "OPENAI_API_KEY=" not in environ and "RLM_API_KEY=" not in environ
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
    assert CANARY not in cmdline
    for cell in ("import os", "os.environ", "import sys", "sys.modules"):
        assert CANARY not in harness.execute(cell).all_text
    shown = harness.execute("%rlm show")
    if shown.ok:  # the LLM layer found the key in the kernel's private store, and shows only that it is there
        api_key_line = next(line for line in (shown.result or "").splitlines() if line.startswith("api_key"))
        assert "yes" in api_key_line and CANARY not in shown.all_text


def test_secret_names_and_store() -> None:
    env = {
        "OPENAI_API_KEY": "a",
        "HF_TOKEN": "b",
        "AWS_SECRET_ACCESS_KEY": "c",
        "HOME": "/h",
        "RLM_MODEL": "m",
    }
    taken = secrets.take_secrets_from_environ(env)
    assert taken == ["AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "OPENAI_API_KEY"]
    assert env == {"HOME": "/h", "RLM_MODEL": "m"}
    assert secrets.get_secret("OPENAI_API_KEY") == "a"
    assert secrets.get_secret("HF_TOKEN") == "b"


def test_secrets_pass_through_a_pipe() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, json.dumps({"GEMINI_API_KEY": "g-secret"}).encode())
    os.close(write_fd)
    env = {secrets.SECRETS_FD_VAR: str(read_fd)}
    assert secrets.load_secrets_from_fd(env) == ["GEMINI_API_KEY"]
    assert env == {}
    assert secrets.get_secret("GEMINI_API_KEY") == "g-secret"
    with pytest.raises(OSError):
        os.fstat(read_fd)
