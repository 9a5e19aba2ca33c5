"""Comm (widget) messages sent while a cell runs are capped (issue 12, hole 5): no cell-reachable widget
exists today, so the cap is tested on ipykernel's comm class itself, with its sender recorded."""

from __future__ import annotations

from typing import Any

import pytest
from ipykernel.comm.comm import BaseComm

from rlm_kernel import kernel as rlm_kernel_module
from rlm_kernel.llm import events as llm_events
from rlm_kernel.sandbox import Limits, SandboxSession


def test_comm_messages_are_capped_while_a_cell_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, Any]] = []

    def record(
        self: Any, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> None:
        sent.append((msg_type, data))

    monkeypatch.setattr(BaseComm, "publish_msg", record)
    session = SandboxSession(Limits(output_bytes=1000, memory_mb=0), seed=1)
    monkeypatch.setattr(rlm_kernel_module, "COMM_TRAFFIC_FLOOR", 0)
    llm_events.set_current_parent({"header": {"msg_id": "cell-1"}})  # this test's own LLM session
    rlm_kernel_module._install_comm_cap(session)
    comm = object.__new__(BaseComm)

    BaseComm.publish_msg(comm, "comm_msg", {"state": {"value": "v" * 5000}})  # outside a cell: untouched
    session.active_depth = 1
    BaseComm.publish_msg(comm, "comm_msg", {"state": {"value": "x" * 50_000}})  # over the cell's budget
    BaseComm.publish_msg(comm, "comm_msg", {"state": {"value": "small"}})
    for _ in range(100):
        BaseComm.publish_msg(comm, "comm_msg", {"state": {"value": "y" * 900}})
    session.active_depth = 0

    values = [data["state"]["value"] for _, data in sent]
    assert values[0] == "v" * 5000 and "x" * 50_000 not in values and "small" in values
    assert sum(map(len, values[1:])) <= 1000 * rlm_kernel_module.COMM_TRAFFIC_FACTOR
    assert session.output_dropped >= 50_000
