"""A relative `RLM_CACHE_DIR` (or `cache_dir` anywhere) means the notebook's directory; `%rlm show` says so.

JupyterLab and Notebook 7 tell the kernel where the notebook is (`JPY_SESSION_NAME`); other frontends start
the kernel in the notebook's directory. The kernel tests start it elsewhere on purpose, to tell the two apart.
"""

from __future__ import annotations

from pathlib import Path

from rlm_kernel.llm import load_config
from rlm_kernel.llm.cache import CACHE_FILE
from tests.kernel_client import KernelHarness
from tests.llm_server import LLMTestServer


def test_relative_cache_dir_is_taken_from_the_notebook_path(tmp_path: Path) -> None:
    notebooks = tmp_path / "project" / "analysis"
    notebooks.mkdir(parents=True)
    env = {"JPY_SESSION_NAME": str(notebooks / "study.ipynb"), "RLM_CACHE_DIR": "runs/cache"}
    config = load_config(environ=env, use_settings=False, provider="local")
    assert config.cache_dir == str(notebooks / "runs" / "cache")
    assert config.sources["cache_dir"] == "env RLM_CACHE_DIR: 'runs/cache' in the notebook's directory"


def test_absolute_and_home_cache_dirs_are_kept(tmp_path: Path) -> None:
    env = {"JPY_SESSION_NAME": str(tmp_path / "nb.ipynb"), "RLM_CACHE_DIR": str(tmp_path / "abs")}
    config = load_config(environ=env, use_settings=False, provider="local")
    assert config.cache_dir == str(tmp_path / "abs") and config.sources["cache_dir"] == "env RLM_CACHE_DIR"
    home = load_config(environ={"RLM_CACHE_DIR": "~/rlm-c"}, use_settings=False, provider="local")
    assert home.cache_dir == str(Path("~/rlm-c").expanduser().resolve())


def test_without_a_notebook_path_the_start_directory_is_used(tmp_path: Path) -> None:
    # a JPY_SESSION_NAME that is relative or names no existing directory is not trusted as the notebook's
    from rlm_kernel.llm.config import _START_DIR
    from rlm_kernel.private_files import default_cache_dir

    for session in ("", "study.ipynb", str(tmp_path / "missing" / "study.ipynb")):
        env = {"JPY_SESSION_NAME": session} if session else {}
        config = load_config(environ=env, use_settings=False, provider="local")
        assert config.cache_dir == str(default_cache_dir(_START_DIR)), session
        assert config.sources["cache_dir"] == "default: per user, for the notebook's directory"
    assert not default_cache_dir(_START_DIR).is_relative_to(_START_DIR)  # outside the context root


def _kernel_env(server: LLMTestServer, **extra: str) -> dict[str, str]:
    return {
        "RLM_PROVIDER": "openai",
        "RLM_BASE_URL": server.openai_base_url,
        "RLM_API_KEY": "sk-local-test",
        "RLM_MODEL": "cache-dir-model",
        "RLM_CACHE": "readwrite",
        "RLM_CACHE_DIR": "rel-cache",
        **extra,
    }


def test_kernel_writes_a_relative_cache_beside_the_notebook(tmp_path: Path) -> None:
    """Started in one directory for a notebook in another (as jupyter_server may), the recordings land
    beside the notebook and `%rlm show` names that directory."""
    started_in, notebooks = tmp_path / "started-in", tmp_path / "notebooks"
    started_in.mkdir()
    notebooks.mkdir()
    with LLMTestServer() as server:
        env = _kernel_env(server, JPY_SESSION_NAME=str(notebooks / "study.ipynb"))
        with KernelHarness(env=env, cwd=str(started_in), remove_env=("RLM_CONFIG",)) as kernel:
            shown = kernel.execute("%rlm show")
            assert shown.ok, shown
            assert str(notebooks / "rel-cache") in shown.all_text, shown.all_text
            assert "'rel-cache' in the notebook's directory" in shown.all_text
            ran = kernel.execute("print(llm_query('where does this answer go'))")
            assert ran.ok, ran
    assert (notebooks / "rel-cache" / CACHE_FILE).is_file()
    assert not (started_in / "rel-cache").exists()


def test_kernel_without_a_notebook_path_uses_its_working_directory(tmp_path: Path) -> None:
    """nbclient, papermill (`--cwd`) and VS Code start the kernel in the notebook's directory."""
    started_in = tmp_path / "nb-dir"
    started_in.mkdir()
    with LLMTestServer() as server:
        env = _kernel_env(server)
        with KernelHarness(env=env, cwd=str(started_in), remove_env=("RLM_CONFIG", "JPY_SESSION_NAME")) as k:
            assert k.execute("llm_query('recorded here')").ok
            shown = k.execute("%rlm show").all_text
    assert (started_in / "rel-cache" / CACHE_FILE).is_file()
    assert str(started_in / "rel-cache") in shown
