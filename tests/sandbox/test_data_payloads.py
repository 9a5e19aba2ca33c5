"""The data-stack payloads (numpy, pandas, matplotlib) run in-process through `run_source`.

The same table runs through a real kernel in test_data_payloads_kernel.py; canaries never appear in output.
"""

from __future__ import annotations

import pytest

from rlm_kernel.sandbox import SandboxSession, new_namespace, run_source
from tests.sandbox.data_payloads import DATA_PAYLOADS
from tests.sandbox.payloads import Payload, render
from tests.sandbox.test_payloads import check

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

IN_PROCESS = [p for p in DATA_PAYLOADS if not p.kernel_only and not p.isolated]


def test_there_are_enough_data_payloads() -> None:
    attacks = [p for p in DATA_PAYLOADS if p.category not in ("control", "data_limits")]
    controls = [p for p in DATA_PAYLOADS if p.category == "control"]
    assert len(attacks) >= 60 and len(controls) >= 30
    libraries = {p.category.split("_")[0] for p in attacks}
    assert {"np", "pd", "mpl"} <= libraries
    assert len({(p.category, p.id) for p in DATA_PAYLOADS}) == len(DATA_PAYLOADS), "ids must be unique"


@pytest.mark.parametrize("payload", IN_PROCESS, ids=[f"{p.category}-{p.id}" for p in IN_PROCESS])
def test_data_payload(payload: Payload, session: SandboxSession, secret_file: str) -> None:
    namespace = new_namespace(session)
    outcome = run_source(render(payload, secret_file), namespace, session)
    check(payload, outcome)
    after = run_source("print(sum([1, 2, 3]))", namespace, session)
    assert after.error is None and after.stdout == "6\n", after
