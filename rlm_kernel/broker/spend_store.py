"""The session's spending kept across brokers: a memory file the supervisor makes, every broker inherits.

Made in the supervisor before it forks a broker (`SpendStore.create`), so the kernel never holds it; each
broker reads it at start and writes after each settled call (`Ledger.persist`). It imports nothing of ours:
the supervisor makes it while the kernel starts.
"""

from __future__ import annotations

import json
import os
import time

__all__ = ["USED", "SpendStore"]

USED = ("calls", "input_tokens", "output_tokens", "usd")
_SIZE = 4096


class SpendStore:
    """The session's spending and start time (monotonic clock), in a memory file shared by the supervisor and
    its brokers; `fd` None: kept nowhere (not Linux)."""

    def __init__(self, fd: int | None = None) -> None:
        self.fd = fd

    @classmethod
    def create(cls) -> SpendStore:
        """A new store (in the supervisor, before it forks a broker); starts the session's clock."""
        try:
            fd = os.memfd_create("rlm-broker-spending", 0)  # inherited by forked brokers, never the kernel
        except (AttributeError, OSError):
            return cls(None)
        store = cls(fd)
        store.save(time.monotonic(), dict.fromkeys(USED, 0))
        return store

    def load(self) -> tuple[float, dict[str, float]] | None:
        if self.fd is None:
            return None
        try:
            data = json.loads(os.pread(self.fd, _SIZE, 0).rstrip(b"\0") or b"null")
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        return float(data["started"]), {k: data["used"].get(k, 0) for k in USED}

    def save(self, started: float, used: dict[str, float]) -> None:
        if self.fd is None:
            return
        data = json.dumps({"started": started, "used": used}).encode("ascii")
        try:
            os.pwrite(self.fd, data.ljust(_SIZE, b"\0"), 0)
        except OSError:
            pass
