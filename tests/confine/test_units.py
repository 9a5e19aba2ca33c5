"""Pieces of the OS layer that need no kernel: connection-file ports, stale markers, the launcher's argv."""

from __future__ import annotations

import json
from pathlib import Path

from rlm_kernel.__main__ import _connection_file
from rlm_kernel.sandbox.confine import _connection_ports, _remove_stale_markers


def test_ports_come_from_the_connection_file(tmp_path: Path) -> None:
    info = {"shell_port": 5, "iopub_port": 6, "stdin_port": 7, "control_port": 8, "hb_port": 9}
    path = tmp_path / "k.json"
    path.write_text(json.dumps({**info, "transport": "tcp"}))
    assert _connection_ports(str(path)) == [5, 6, 7, 8, 9]
    path.write_text(json.dumps({**info, "transport": "ipc"}))
    assert _connection_ports(str(path)) is None  # no TCP ports to allow: bind is then left unrestricted
    assert _connection_ports(str(tmp_path / "missing.json")) is None


def test_only_blank_markers_of_gone_kernels_are_removed(tmp_path: Path) -> None:
    (tmp_path / "gone.json.rlm-backstop").write_text(" " * 256)
    (tmp_path / "live.json").write_text("{}")
    (tmp_path / "live.json.rlm-backstop").write_text(" " * 256)
    (tmp_path / "died.json.rlm-backstop").write_text(
        '{"backstop_seconds": 3}'
    )  # its note is still to be shown
    _remove_stale_markers(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "died.json.rlm-backstop",
        "live.json",
        "live.json.rlm-backstop",
    ]


def test_launcher_finds_the_connection_file_in_its_arguments() -> None:
    assert _connection_file(["-f", "/r/k.json"]) == "/r/k.json"
    assert _connection_file(["--IPKernelApp.connection_file=/r/k.json"]) == "/r/k.json"
    assert _connection_file(["--debug"]) is None
