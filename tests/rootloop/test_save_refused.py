"""A run's result cannot be written while model-written code runs (every block of a run, sub-runs too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_kernel.repl import context as ctxmod
from rlm_kernel.repl.errors import ReplError
from rlm_kernel.rootloop.trajectory import RLMResult
from rlm_kernel.sandbox.origin import model_code


def test_saving_is_refused_inside_model_code_and_allowed_after(tmp_path: Path) -> None:
    result = RLMResult("q", "a", "final", "done", [], {})
    ctxmod.set_allowed_roots([tmp_path])
    try:
        with model_code():
            for write in (result.save, result.to_jsonl):
                suffix = ".ipynb" if write == result.save else ".jsonl"
                with pytest.raises(ReplError, match="not available inside a root-loop run"):
                    write(str(tmp_path / f"run{suffix}"))
        assert not list(tmp_path.iterdir())
        assert Path(result.to_jsonl(str(tmp_path / "run.jsonl"))).is_file()
    finally:
        ctxmod.set_allowed_roots(None)
