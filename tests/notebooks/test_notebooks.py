"""The tutorials as tests: their metadata, their recordings, and an nbval replay of each, offline.

Each replay runs `pytest --nbval` on one notebook in a subprocess, the way the README tells a developer to.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = ROOT / "notebooks"
SANITIZE = NOTEBOOKS_DIR / "nbval-sanitize.cfg"
EXPECTED = [
    "01-quickstart",
    "02-map-reduce",
    "03-finding-things",
    "04-recursive-decomposition",
    "05-autonomous-root",
    "06-reproducible-research",
    "07-tables-and-plots",
    "08-corpora-and-citations",
]
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]-*.ipynb"))


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _nbval(target: Path, *, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    try:
        KernelSpecManager().get_kernel_spec("rlm")
    except NoSuchKernel:
        pytest.fail("the rlm kernelspec is not installed: run `rlm-kernel install --sys-prefix` first")
    cmd = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-header", "-o", "addopts=",
        "--nbval", "--nbval-kernel-name", "rlm", "--nbval-sanitize-with", str(SANITIZE),
        "--nbval-cell-timeout", "600", str(target),
    ]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_all_tutorials_exist() -> None:
    assert [p.stem for p in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_kernelspec_is_rlm(path: Path) -> None:
    meta = _load(path)["metadata"]
    assert meta["kernelspec"]["name"] == "rlm"
    assert meta["kernelspec"]["language"] == "python"
    assert meta["language_info"]["name"] == "python"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_executed_with_recordings(path: Path) -> None:
    nb = _load(path)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code, "a tutorial without code"
    missing = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert not missing, f"code cells {missing} have not been executed; re-record with notebooks/record.py"
    unexpected = [
        i for i, c in enumerate(code)
        if any(o.get("output_type") == "error" for o in c.get("outputs", []))
        and "raises-exception" not in c.get("metadata", {}).get("tags", [])
    ]
    assert not unexpected, f"code cells {unexpected} failed when recorded (only raises-exception cells may)"
    if nb["metadata"].get("rlm", {}).get("model_calls") is False:
        return  # a tutorial that makes no model calls (07: tables and plots) has nothing to record
    cache = NOTEBOOKS_DIR / ".rlm-cache" / path.stem
    assert cache.is_dir() and any(cache.iterdir()), f"no recorded calls in {cache.relative_to(ROOT)}"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_replays_offline_under_nbval(path: Path) -> None:
    proc = _nbval(path, cwd=ROOT)
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-60:])
    assert proc.returncode == 0, f"nbval replay of {path.name} failed:\n{tail}"


@pytest.mark.timeout(900)
def test_replay_miss_fails_the_notebook(tmp_path: Path) -> None:
    """Change one prompt in a copy of the quickstart: its replay must fail, not silently run stale."""
    source = NOTEBOOKS_DIR / "01-quickstart.ipynb"
    work = tmp_path / "notebooks"
    work.mkdir()
    shutil.copy(NOTEBOOKS_DIR / "conftest.py", work / "conftest.py")
    shutil.copytree(NOTEBOOKS_DIR / ".rlm-cache" / source.stem, work / ".rlm-cache" / source.stem)
    shutil.copytree(NOTEBOOKS_DIR / "data", work / "data")  # a copy: load_context refuses symlinks out
    nb = _load(source)
    changed = False
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and "llm_query(" in text and not changed:
            cell["source"] = text.replace("llm_query(", "llm_query('(edited) ' + ", 1)
            changed = True
    assert changed, "the quickstart has no llm_query cell to edit"
    (work / source.name).write_text(json.dumps(nb))
    proc = _nbval(work / source.name, cwd=work)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"an edited prompt replayed without a failure:\n{out[-3000:]}"
    assert "this call was never recorded" in out, f"failed, but not on a missing recording:\n{out[-3000:]}"
    assert "1 failed" in out, f"only the edited cell should fail:\n{out[-3000:]}"
