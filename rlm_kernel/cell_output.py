"""What a cell's display output costs: the display hook and publisher that charge each bundle to the cell's
output cap (`SandboxSession.cap_mimebundle`), skip values a helper has shown already, and stamp the cell's
model calls into the bundle's metadata (provenance)."""

from __future__ import annotations

from typing import Any

from ipykernel.displayhook import ZMQShellDisplayHook
from ipykernel.zmqshell import ZMQDisplayPublisher

from rlm_kernel.rootloop import provenance

__all__ = ["RLMDisplayHook", "RLMDisplayPublisher", "capped"]


def capped(shell: Any, data: Any, metadata: Any) -> tuple[Any, Any, int]:
    """A display bundle under the cell's output cap (`SandboxSession.cap_mimebundle`), metadata trimmed to
    the representations kept, and the bytes it was charged."""
    session = getattr(shell, "sandbox_session", None)
    if session is None or not isinstance(data, dict):
        return data, metadata, 0
    before = session.output_used
    capped = session.cap_mimebundle(data)
    if capped is not data and isinstance(metadata, dict):
        metadata = {k: v for k, v in metadata.items() if k in capped or "/" not in k}
    return capped, metadata, max(session.output_used - before, 0)


class RLMDisplayHook(ZMQShellDisplayHook):
    """execute_result bundles (a cell's last expression) count against the per-cell output cap; a value a
    helper has shown already (SHOW_VARS' listing, FINAL_VAR's answer: sandbox/shown.py) is not shown again."""

    def __call__(self, result: Any = None) -> None:
        session = getattr(self.shell, "sandbox_session", None)
        if session is not None and session.shown.consume(result):
            return
        super().__call__(result)

    def write_format_data(self, format_dict: Any, md_dict: Any = None) -> None:
        format_dict, md_dict, _ = capped(self.shell, format_dict, md_dict)
        md_dict = _provenance(self.shell, md_dict, (self.parent_header or {}).get("msg_id"))
        super().write_format_data(format_dict, md_dict)


class RLMDisplayPublisher(ZMQDisplayPublisher):
    """display_data / update_display_data bundles (`display()`) count against the per-cell output cap.

    An update replaces what its display showed, so a display with a `display_id` is charged for its latest
    bundle only (live views that redraw a growing bundle each step do not use up the cap). What such
    displays and their updates *send* is capped too: at most UPDATE_TRAFFIC_FACTOR times the output cap per
    cell; later ones are dropped (and counted in the cell's "output truncated" note).
    """

    UPDATE_TRAFFIC_FACTOR = 5  # issue 26: 20 let one cell send 19 MB of updates at the 1 MB default

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._charged: dict[str, tuple[Any, int]] = {}  # display_id -> (cell it was charged in, bytes)
        self._traffic: tuple[Any, int] = (None, 0)  # (cell, bytes sent by displays with an id)

    def publish(self, data: Any, metadata: Any = None, **kwargs: Any) -> None:  # type: ignore[override]
        transient = kwargs.get("transient") or {}
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        session = getattr(self.shell, "sandbox_session", None)
        cell = (self.parent_header or {}).get("msg_id")
        if display_id is not None and session is not None and session.limits.output_bytes:
            cap = session.limits.output_bytes
            size = min(_bundle_size(data), cap)
            sent = self._traffic[1] if self._traffic[0] == cell else 0
            if sent + size > cap * self.UPDATE_TRAFFIC_FACTOR:
                session.output_dropped += size
                return
            self._traffic = (cell, sent + size)
        if display_id is not None and session is not None:
            previous = self._charged.pop(display_id, None)
            if previous is not None and previous[0] == cell:
                session.output_used = max(session.output_used - previous[1], 0)
        data, metadata, charged = capped(self.shell, data, metadata)
        metadata = _provenance(self.shell, metadata, cell)
        if display_id is not None:
            if len(self._charged) > 10_000:
                self._charged.clear()
            self._charged[display_id] = (cell, charged)
        super().publish(data, metadata, **kwargs)


def _provenance(shell: Any, metadata: Any, cell: str | None) -> Any:
    """`metadata` with the cell's model calls under `rlm` (rlm/provenance.py), when it made any."""
    count = getattr(shell, "execution_count", None)  # IPython counts the running cell before it runs
    return provenance.stamp(metadata, cell, count - 1 if isinstance(count, int) else None)


def _bundle_size(data: Any) -> int:
    """Bytes of a display bundle's largest representation (what the cap counts)."""
    if not isinstance(data, dict):
        return len(repr(data))
    sizes = [len(v) if isinstance(v, (str, bytes)) else len(repr(v)) for v in data.values()]
    return max(sizes, default=0)
