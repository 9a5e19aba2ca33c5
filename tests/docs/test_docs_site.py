"""The documentation site covers what the code has: every preloaded helper, magic, `%rlm` subcommand, LLM
setting and sandbox limit appears in the generated reference; every tutorial is a page and has a
`parameters` cell; the README stays a front page (issue 32). `.ci/run` builds the site with warnings as
errors; `test_the_site_builds_with_warnings_as_errors` does the same in the suite."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import rlm_reference  # noqa: E402 - the docs' own extension, importable once docs/_ext is on the path


def test_every_helper_is_in_the_reference() -> None:
    from rlm_kernel.repl.helpers import HELPERS
    from rlm_kernel.repl.preload import ANALYSIS_NAMES

    page = rlm_reference.helpers_page()
    for name in [*HELPERS, *ANALYSIS_NAMES]:
        assert f"## `{name}`" in page, name
        assert "state" not in page.split(f"## `{name}`", 1)[1].split("```", 2)[1], (
            name
        )  # the cell's signature


def test_every_magic_and_subcommand_is_in_the_reference() -> None:
    import rlm_kernel.kernel  # noqa: F401 - registers every magic, as the kernel does at start
    from rlm_kernel import magics

    page = rlm_reference.magics_page()
    for name in magics.allowed_line_magics():
        assert f"`%{name}`" in page, name
    for name in magics.allowed_cell_magics():
        assert f"`%%{name}`" in page, name
    for name in magics.rlm_subcommands():
        assert f"`%rlm {name}`" in page, name
    assert "`%rlm version`" in page


def test_every_setting_and_limit_is_in_the_generated_table() -> None:
    from rlm_kernel.llm.schema import LLM_SETTINGS
    from rlm_kernel.sandbox.limits import Limits

    page = rlm_reference.settings_page()
    for setting in LLM_SETTINGS:
        assert f"| `{setting.name}` |" in page, setting.name
        if setting.env_var:
            assert f"`{setting.env_var}`" in page, setting.env_var
    for field in dataclasses.fields(Limits):
        row = next(line for line in page.splitlines() if f"`RLM_{field.name.upper()}`" in line)
        assert row.rsplit("|", 2)[1].strip(), f"RLM_{field.name.upper()} has no description"


def test_every_tutorial_is_a_page_with_a_parameters_cell() -> None:
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1 and tagged[0]["cell_type"] == "code", notebook.name
    index = (DOCS / "tutorials" / "index.md").read_text(encoding="utf-8")
    assert "_generated/*" in index  # the toctree globs the copied notebooks


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for heading in ("## A 60-second tour", "## How it compares", "## Install", "## Documentation"):
        assert heading in readme, heading
    for link in ("docs/getting-started.md", "docs/guide/repl.md", "docs/security/index.md"):
        assert (ROOT / link).is_file() and link in readme, link


def test_the_version_lives_in_one_place() -> None:
    import tomllib

    import rlm_kernel
    from rlm_kernel.kernel import BANNER

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "rlm_kernel/__init__.py"
    assert f"RLM kernel {rlm_kernel.__version__} " in BANNER
    assert f"## {rlm_kernel.__version__.removesuffix('.dev0')}" in (ROOT / "CHANGELOG.md").read_text(
        encoding="utf-8"
    )


@pytest.mark.skipif(importlib.util.find_spec("sphinx") is None, reason="needs the [docs] extra")
def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    for page in (
        "index",
        "getting-started",
        "reference/_generated/settings",
        "tutorials/_generated/01-quickstart",
    ):
        assert (tmp_path / f"{page}.html").is_file(), page
