"""The README's install lines work as written from a clone (issue 21: `pip install rlm-kernel` found nothing).

The fast test checks the lines name what the repository has; the slow one (`python -m pytest -m slow
tests/docs`) runs them verbatim in a fresh venv inside a fresh clone and starts the kernel they installed.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def install_lines() -> list[str]:
    """The commands of the first code block of `## Install`, without their comments."""
    section = README.read_text(encoding="utf-8").split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert block, "the Install section has no bash block"
    return [
        line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.split("#", 1)[0].strip()
    ]


def test_install_lines_name_what_the_repository_has() -> None:
    lines = install_lines()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert lines[0].startswith("pip install -e "), lines
    target = shlex.split(lines[0])[-1]
    extras = re.fullmatch(r"\.\[([\w,-]+)\]", target)
    assert extras, f"the install line does not install this clone: {lines[0]}"
    assert set(extras.group(1).split(",")) <= set(project["optional-dependencies"]), lines[0]
    assert lines[1].split()[0] in project["scripts"], lines[1]
    readme = README.read_text(encoding="utf-8")
    bare = [
        m
        for m in re.findall(r"^\s*pip install ([^\n#]*)", readme, re.M)
        if m.strip().startswith("rlm-kernel")
    ]
    assert not bare, f"the package is not on PyPI yet, but the README says: pip install {bare}"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_install_lines_run_verbatim_in_a_fresh_clone(tmp_path: Path) -> None:
    clone, venv = tmp_path / "clone", tmp_path / "venv"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_PATH")}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    started = time.monotonic()
    outputs = []
    for line in install_lines():
        run = subprocess.run(
            line, shell=True, cwd=clone, env=env, capture_output=True, text=True, timeout=900
        )
        assert run.returncode == 0, f"{line}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        outputs.append(run.stdout)
    print(f"README install lines in a fresh venv: {time.monotonic() - started:.0f} s")
    assert re.search(rf"^\s*rlm\s+{re.escape(str(venv))}/share/jupyter/kernels/rlm$", outputs[-1], re.M), (
        outputs
    )
    probe = (
        "from jupyter_client.manager import start_new_kernel\n"
        "km, kc = start_new_kernel(kernel_name='rlm', startup_timeout=120)\n"
        "kc.execute_interactive('print(6 * 7)', timeout=60, output_hook=lambda m: print(m['content']))\n"
        "kc.stop_channels(); km.shutdown_kernel()\n"
    )
    kernel = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        cwd=clone, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert kernel.returncode == 0 and "'text': '42\\n'" in kernel.stdout, (
        kernel.stdout[-2000:] + kernel.stderr[-2000:]
    )
