"""What a cell's display output may be and costs: the display formatter, hook, publisher and pager
payloads through which every bundle is cleaned (`rlm_kernel.output`: inert MIME types, sanitised HTML — the
kernel's own displays excepted), charged to the cell's output cap (`SandboxSession.cap_mimebundle`), not
shown twice when a helper has shown it already, and stamped with the cell's model calls (provenance)."""

from __future__ import annotations

from typing import Any

from ipykernel.displayhook import ZMQShellDisplayHook
from ipykernel.zmqshell import ZMQDisplayPublisher
from IPython.core import display_functions
from IPython.core.formatters import DisplayFormatter
from IPython.core.payload import PayloadManager

from rlm_kernel.output import (
    clean_bundle,
    clean_payload_data,
    is_owned,
    label_model_output,
    mark,
    take_mark,
)
from rlm_kernel.output.trust import mark_model_made, model_made
from rlm_kernel.rootloop import provenance
from rlm_kernel.sandbox.made import made
from rlm_kernel.sandbox.origin import (
    called_directly_by_person,
    made_by_model,
    model_code_running,
    model_frame_on_stack,
    register_display_function,
    register_display_path,
)

__all__ = ["RLMDisplayFormatter", "RLMDisplayHook", "RLMDisplayPublisher", "RLMPayloadManager", "capped"]

# a cell's display() and the handle methods that only forward to it (origin.called_directly_by_person)
register_display_function(display_functions.display.__code__)
register_display_path(
    display_functions.update_display.__code__,
    display_functions.DisplayHandle.update.__code__,
    display_functions.DisplayHandle.display.__code__,
)


def _from_model(metadata: Any) -> bool:
    """True if the bundle being sent was made by model-written code: marked so by the formatter (an object of
    a class model code defined), or sent while model code runs or is on the stack (its `display()` call)."""
    if take_mark(metadata)[0]:
        return False  # the kernel's own display
    return model_made(metadata) or model_code_running() or model_frame_on_stack() is not None


def capped(shell: Any, data: Any, metadata: Any) -> tuple[Any, Any, int]:
    """A display bundle cleaned (`output.clean_bundle`), labelled when model-written code made it
    (`output.label_model_output`), under the cell's output cap (`SandboxSession.cap_mimebundle`), metadata
    trimmed to the representations kept, and the bytes it was charged."""
    if _from_model(metadata):
        data, metadata, charged = _capped(shell, data, metadata)
        return label_model_output(data), metadata, charged
    return _capped(shell, data, metadata)


def _capped(shell: Any, data: Any, metadata: Any) -> tuple[Any, Any, int]:
    session = getattr(shell, "sandbox_session", None)
    if session is None or not isinstance(data, dict):
        data, metadata = clean_bundle(data, metadata)
        if session is None:
            return data, metadata, 0
    before = session.output_used
    room = session.limits.output_bytes - before
    # cut first (what is over the cap is dropped, never cleaned: a huge HTML costs no sanitising), then clean
    capped = session.cap_mimebundle(data)
    if capped is not data and isinstance(metadata, dict):
        metadata = {k: v for k, v in metadata.items() if k in capped or "/" not in k}
    cleaned, metadata = clean_bundle(capped, metadata)
    rich = any(key != "text/plain" for key in cleaned)
    if session.limits.output_bytes and rich and _bundle_size(cleaned) > max(room, 0):
        # escaping made a representation larger than the room left (`<` becomes `&lt;`): text only
        text = cleaned.get("text/plain")
        text = text[: max(room, 0)] if isinstance(text, str) else ""
        note = "[output truncated: its sanitised HTML is over the per-cell limit (RLM_OUTPUT_BYTES)]"
        cleaned, metadata = {"text/plain": f"{text}\n{note}" if text else note}, {}
    return cleaned, metadata, max(session.output_used - before, 0)


class RLMDisplayFormatter(DisplayFormatter):
    """IPython's formatter; the bundle of an object the kernel made for display (`output.own`) is marked as
    the kernel's own, so the publisher keeps its styling. Every other bundle is cleaned downstream."""

    def format(self, obj: Any, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        data, metadata = super().format(obj, include=include, exclude=exclude)
        if is_owned(obj):
            metadata = mark(metadata)
        elif made_by_model(obj) or made(obj):
            # an object of a class model code defined, or a library object (a DataFrame, a figure) it made:
            # labelled on its way out, wherever it is displayed (sandbox/made.py)
            metadata = mark_model_made(metadata)
        return data, metadata


class RLMPayloadManager(PayloadManager):
    """execute_reply payloads: only the pager (`obj?`), its bundle cleaned like a display. The others
    (`set_next_input`, which writes code into the person's next cell; `edit_magic`; `ask_exit`) come only
    from magics the kernel refuses, and are dropped should anything else make one."""

    def write_payload(self, data: Any, single: bool = True) -> None:
        if isinstance(data, dict) and data.get("source") == "page":
            super().write_payload(clean_payload_data(data), single)


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

    The kernel's own displays (marked: `output.trust`) cannot be updated or joined by cell code (their
    `display_id` is refused to it), and one that a cell's `clear_output` wiped is shown again, not updated
    into nothing, at its next update. `transient` carries the display id only.
    """

    UPDATE_TRAFFIC_FACTOR = 5  # issue 26: 20 let one cell send 19 MB of updates at the 1 MB default
    _MAX_TRACKED = 10_000

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._charged: dict[str, tuple[Any, int]] = {}  # display_id -> (cell it was charged in, bytes)
        self._traffic: tuple[Any, int] = (None, 0)  # (cell, bytes sent by displays with an id)
        self._kernel_ids: dict[str, tuple[Any, int]] = {}  # the kernel's display_id -> (cell, clears seen)
        self._clears: dict[Any, int] = {}  # cell -> clear_output calls in it

    def clear_output(self, wait: bool = False) -> None:
        cell = (self.parent_header or {}).get("msg_id")
        if len(self._clears) > 256:
            self._clears.clear()
        self._clears[cell] = self._clears.get(cell, 0) + 1
        super().clear_output(wait=wait)

    def _route(
        self, display_id: Any, trusted: bool, update: bool, cell: Any
    ) -> tuple[str | None, bool, bool]:
        """(display id to send, update?, send at all?) for a bundle from the kernel (`trusted`) or a cell."""
        if type(display_id) is not str:
            return None, False, not update
        known = self._kernel_ids.get(display_id)
        if not trusted:
            if known is not None:  # a cell may neither update nor join the kernel's own display
                return None, False, not update
            return display_id, update, True
        if update and known is not None and known[1] != self._clears.get(known[0], 0):
            update = False  # wiped by clear_output since: show it again
        while len(self._kernel_ids) > self._MAX_TRACKED:  # forget the oldest first
            self._kernel_ids.pop(next(iter(self._kernel_ids)))
        home = known[0] if known is not None and update else cell
        self._kernel_ids[display_id] = (home, self._clears.get(home, 0))
        return display_id, update, True

    def publish(self, data: Any, metadata: Any = None, **kwargs: Any) -> None:  # type: ignore[override]
        transient = kwargs.pop("transient", None) or {}
        session = getattr(self.shell, "sandbox_session", None)
        cell = (self.parent_header or {}).get("msg_id")
        asked = transient.get("display_id") if isinstance(transient, dict) else None
        trusted = take_mark(metadata)[0]
        display_id, update, send = self._route(asked, trusted, bool(kwargs.pop("update", False)), cell)
        if not send:
            return
        kwargs["transient"] = {"display_id": display_id} if display_id is not None else {}
        kwargs["update"] = update
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
        if not trusted and not called_directly_by_person():
            metadata = mark_model_made(metadata)  # a display reached through a wrapper model code could make
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
