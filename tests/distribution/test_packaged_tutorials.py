"""Every tutorial in notebooks/ is packaged: pyproject's wheel shared-data maps each numbered notebook to
share/rlm-kernel/tutorials (the fast half of the slow wheel test, which caught an unlisted tutorial only after
a build)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_numbered_tutorial_is_in_the_wheels_shared_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shared = config["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    tutorials = sorted(f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    listed = sorted(k for k in shared if k.endswith(".ipynb"))
    assert listed == tutorials, "list each tutorial under [tool.hatch.build.targets.wheel.shared-data]"
    for source in listed:
        assert shared[source] == f"share/rlm-kernel/tutorials/{Path(source).name}"
