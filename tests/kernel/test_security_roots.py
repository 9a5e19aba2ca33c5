"""`%rlm security` lists the context roots in force and where each came from (issue 21: roots add, not
replace, unless asked; the person can see which apply)."""

from __future__ import annotations

from pathlib import Path

from tests.kernel_client import KernelHarness


def _roots_shown(text: str) -> list[str]:
    rows = [line for line in text.splitlines() if line.startswith("context root ")]
    return [row.removeprefix("context root").strip() for row in rows]


def test_security_shows_the_notebook_directory_and_the_added_roots(tmp_path: Path) -> None:
    notebook_dir, data = tmp_path / "nb", tmp_path / "data"
    notebook_dir.mkdir()
    data.mkdir()
    env = {"RLM_CONTEXT_ROOTS": str(data)}
    with KernelHarness(env=env, cwd=str(notebook_dir), remove_env=("RLM_CONTEXT_ROOTS_ONLY",)) as kernel:
        shown = kernel.execute("%rlm security")
        assert shown.ok, shown
        assert _roots_shown(shown.result or "") == [
            f"{notebook_dir.resolve()} (the notebook's directory)",
            f"{data.resolve()} (RLM_CONTEXT_ROOTS)",
        ], shown.all_text


def test_security_says_when_the_roots_replace_the_notebook_directory(tmp_path: Path) -> None:
    notebook_dir, data = tmp_path / "nb", tmp_path / "data"
    notebook_dir.mkdir()
    data.mkdir()
    env = {"RLM_CONTEXT_ROOTS": f"={data}"}
    with KernelHarness(env=env, cwd=str(notebook_dir), remove_env=("RLM_CONTEXT_ROOTS_ONLY",)) as kernel:
        text = kernel.execute("%rlm security").result or ""
        assert _roots_shown(text) == [
            f"{data.resolve()} (RLM_CONTEXT_ROOTS)",
            "not the notebook's directory (RLM_CONTEXT_ROOTS replaces it)",
        ], text
        refused = kernel.execute("load_context('.')")
        assert not refused.ok and "outside the allowed roots" in refused.all_text, refused
