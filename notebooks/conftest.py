"""nbval set-up for the tutorials: every notebook replays its own recorded LLM calls, offline.

The kernel nbval starts inherits this process's environment, so the cache mode and folder are set here,
per notebook, just before nbval starts that notebook's kernel.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# Not tutorials: the corpora, and the trajectories notebook 5 saves (notebooks nbval must not collect).
collect_ignore = ["data", "runs", "record.py"]
CACHE_ROOT = HERE / ".rlm-cache"

# Keys that would make the kernel pick a real provider instead of the recorded offline model.
_PROVIDER_VARS = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY",
)
# A folder that does not exist: the kernel then reads no user config file (~/.config/rlm-kernel/config.toml),
# whose settings (models, max_tokens, ...) would change the recorded calls' cache keys.
_NO_USER_CONFIG = HERE / ".rlm-cache" / "no-user-config"


def notebook_cache_dir(notebook: Path) -> Path:
    """Where a notebook's recorded calls live: notebooks/.rlm-cache/<notebook stem>/."""
    return CACHE_ROOT / notebook.stem


def recording(notebook: Path) -> dict:
    """Which local model a notebook's recordings were made with: its metadata `rlm.recording`, e.g.
    `{"local_model": "coder", "model": "qwen2.5-coder-1.5b-instruct", "context_window": 16384}`.

    Empty for notebooks recorded on the default offline model (SmolLM2). The model name and window are part of
    every recorded call (the system prompt states the window), so replay must use the same ones.
    """
    meta = json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {})
    found = meta.get("rlm", {}).get("recording", {})
    return found if isinstance(found, dict) else {}


def kernel_env(notebook: Path, mode: str) -> dict[str, str]:
    """The kernel environment for `notebook` in cache `mode` (`replay`, or `readwrite` to record)."""
    env = {
        "RLM_PROVIDER": "local",
        "RLM_CACHE": mode,
        "RLM_CACHE_DIR": str(notebook_cache_dir(notebook)),
        "RLM_DISPLAY": "text",  # deterministic text views of fan-outs and budgets (widgets need a frontend)
    }
    made_with = recording(notebook)
    if made_with.get("model"):
        env["RLM_MODEL"] = str(made_with["model"])
    if made_with.get("context_window"):
        env["RLM_CONTEXT_WINDOW"] = str(made_with["context_window"])
    return env


def prepare_environment(notebook: Path, mode: str) -> None:
    """Set `os.environ` for the kernel of `notebook`: only the offline model, only this notebook's recordings.

    Every `RLM_*` variable and provider key of the calling shell is removed first, so a developer's own
    settings cannot change what is replayed or recorded.
    """
    for name in [n for n in os.environ if n.startswith("RLM_")] + list(_PROVIDER_VARS):
        os.environ.pop(name, None)
    os.environ["XDG_CONFIG_HOME"] = str(_NO_USER_CONFIG)
    os.environ.update(kernel_env(notebook, mode))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before nbval starts a notebook's kernel, point the environment at that notebook's recordings."""
    path = Path(str(item.fspath))
    if path.suffix != ".ipynb":
        return
    prepare_environment(path, "replay")
