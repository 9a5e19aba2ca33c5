"""Without the `[data]` extra, `import pandas` in a cell says how to install it (and is an ImportError)."""

from __future__ import annotations

import importlib.util

import pytest

from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source
from rlm_kernel.sandbox.data import loader


def test_missing_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, session: SandboxSession
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(loader, "_LOADED", [])
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pandas" else real(name, *a)
    )
    outcome = run_source("import pandas as pd", new_namespace(session), session)
    assert outcome.error is not None and outcome.error.startswith("SandboxError:"), outcome
    assert "pandas is not installed" in outcome.error
    assert "pip install 'rlm-kernel[data]'" in outcome.error
    fallback = run_source(
        "try:\n    import pandas\nexcept ImportError:\n    pandas = None\nprint(pandas)",
        new_namespace(session),
        session,
    )
    assert fallback.error is None and fallback.stdout == "None\n", fallback


def test_first_import_is_not_counted_against_the_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the libraries (a second or more on a busy machine) runs with the cell's timers paused."""
    from rlm_kernel.sandbox import Limits

    session = SandboxSession(Limits(cpu_seconds=0.05, cpu_backstop_seconds=0, memory_mb=0), seed=1)
    monkeypatch.setattr(loader, "_LOADED", [])  # load (and warm up) again, under a 50 ms CPU limit
    outcome = run_source(
        "import pandas as pd\nprint(len(pd.DataFrame({'a': [1, 2]})))", new_namespace(session), session
    )
    assert outcome.error is None and outcome.stdout == "2\n", outcome
