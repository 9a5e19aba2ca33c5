"""The real-model run (slow): the coder model, all four systems, through the benchmark's runner.

    python -m pytest -m slow tests/longcontext/test_real_model.py            # serves the [local-coder] GGUF
    RLM_BENCH_BASE_URL=http://127.0.0.1:PORT/v1 python -m pytest -m slow tests/longcontext/test_real_model.py

Runs the issue's protocol cases and the 32K needle at 10 % through `ours`, `rlms`, `bare` and `pipeline`
(hours on a busy 2-core machine; minutes where the calls are already in the store), recording into
benchmarks/results/longcontext/calls.jsonl. It checks that every system produced a row with real calls; the
accuracy figures are the report's, not asserted here (see benchmarks/README.md, *Long-context benchmark*).
"""

from __future__ import annotations

import contextlib
import os

import pytest

from benchmarks.longcontext.run import RESULTS, run
from benchmarks.longcontext.systems import Settings

pytestmark = pytest.mark.slow


def test_protocol_and_needle_on_the_coder_model(tmp_path) -> None:
    with contextlib.ExitStack() as stack:
        url = os.environ.get("RLM_BENCH_BASE_URL")
        if not url:
            from benchmarks.longcontext.serve import xllamacpp_server
            from rlm_kernel.llm.coder_model import CoderModelError, coder_gguf

            try:
                gguf = str(coder_gguf())
            except CoderModelError as err:
                pytest.skip(f"no coder model: {err}")
            url = stack.enter_context(xllamacpp_server(gguf, 16384))
        doc = run(
            url,
            families=["protocol", "needle"],
            lengths=["32K"],
            per_length=1,
            systems=["ours", "rlms", "bare", "pipeline"],
            settings=Settings(),
            store=RESULTS / "calls.jsonl",
            out=tmp_path / "real.json",
            select=r"^(protocol/.*|needle/32K-d10)$",
        )
    assert len(doc["rows"]) == 6 * 4
    for row in doc["rows"]:
        assert row["calls"] >= 1, row
        if row["system"] != "rlms":  # the reference library's own failure is its recorded outcome
            assert "error" not in row, row
        else:  # accepted only when its own FINAL ended the run
            assert row["termination"] in ("final", "max_iterations", "library-error"), row
            assert row["accepted"] == (row["termination"] == "final"), row
