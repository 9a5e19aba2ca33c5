"""ipywidgets is not imported at kernel start, yet a widget frontend is answered and detected at once: the
kernel registers ipywidgets' comm targets itself and imports ipywidgets when a frontend first opens one
(rlm_kernel/widgets/lib.py)."""

from __future__ import annotations

import time
import uuid

from tests.kernel_client import KernelHarness


def _open_control_comm(kernel: KernelHarness) -> None:
    """What JupyterLab and Notebook 7 send when they connect to a kernel (to restore widget state); the
    version is ipywidgets 8's control protocol."""
    content = {"comm_id": uuid.uuid4().hex, "target_name": "jupyter.widget.control", "data": {}}
    msg = kernel.kc.session.msg("comm_open", content, metadata={"version": "1.0.0"})
    kernel.kc.shell_channel.send(msg)


def test_a_widget_frontend_is_detected_without_ipywidgets_at_start() -> None:
    with KernelHarness(env={"RLM_DISPLAY": "auto"}) as kernel:
        ex = kernel.execute("%rlm display")
        assert ex.ok and "display: text (auto: no widget frontend" in ex.all_text, ex
        _open_control_comm(kernel)
        deadline = time.monotonic() + 30
        while True:  # comm messages have no reply: poll until the kernel handled it
            ex = kernel.execute("%rlm display")
            if "display: widgets" in ex.all_text or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert ex.ok and "display: widgets (auto:" in ex.all_text, ex
        assert "Error" not in ex.stderr, ex
