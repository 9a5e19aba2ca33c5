"""Where partition work runs: on the Dask cluster named by `RLM_DASK_SCHEDULER`, else in-process.

Only the module-level `partition_*` functions of `rlm_kernel.analysis.corpus` are submitted (pickled by
reference, so workers need rlm-kernel installed); cell code and model calls never leave the kernel. Results
come back in partition order, with at most `window` partitions' results waiting in the kernel at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rlm_kernel.analysis.errors import AnalysisError
from rlm_kernel.llm.session import current_session

__all__ = ["SCHEDULER_ENV", "imap", "reset", "scheduler_address"]

SCHEDULER_ENV = "RLM_DASK_SCHEDULER"


class _DaskConnection:
    """The kernel's Dask client, made on first use; kept in the kernel's session (`LLMSession.slot`), which
    closes it with the session."""

    def __init__(self) -> None:
        self.client: Any = None
        self.lock = threading.Lock()

    def get(self, address: str) -> Any:
        with self.lock:
            client = self.client
            if client is not None and client.scheduler.address == address and client.status == "running":
                return client
            try:
                from distributed import Client
            except ImportError:
                raise AnalysisError(
                    f"{SCHEDULER_ENV}={address} names a Dask scheduler, but dask.distributed is not "
                    "installed; pip install 'rlm-kernel[dask]' or unset the variable"
                ) from None
            try:
                self.client = Client(address, timeout="30s", set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise AnalysisError(
                    f"cannot reach the Dask scheduler {address} ({SCHEDULER_ENV}): {exc}"
                ) from None
            return self.client

    def close(self) -> None:
        with self.lock:
            client, self.client = self.client, None
        if client is not None:
            client.close()


def _connection() -> _DaskConnection:
    return current_session().slot("analysis.dask", _DaskConnection)


def scheduler_address() -> str | None:
    """The configured scheduler (`tcp://host:port`), or None for in-process work."""
    value = os.environ.get(SCHEDULER_ENV, "").strip()
    return value or None


def reset() -> None:
    """Close the kernel's Dask client (the next call connects again)."""
    _connection().close()


def imap(fn: Callable[..., Any], items: Sequence[Any], *args: Any, window: int = 0) -> Iterator[Any]:
    """`fn(item, *args)` for each item, yielded in order; on the cluster when one is configured.

    With a cluster, at most `window` tasks (default: twice the workers' threads) are submitted ahead of the
    one being yielded, so results of far-ahead partitions do not pile up in the kernel."""
    address = scheduler_address()
    if address is None:
        for item in items:
            yield fn(item, *args)
        return
    client = _connection().get(address)
    if window <= 0:
        window = max(2, 2 * sum(client.nthreads().values()))
    futures: list[Any] = []
    submitted = 0
    for i in range(len(items)):
        while submitted < len(items) and submitted - i < window:
            futures.append(client.submit(fn, items[submitted], *args, pure=False))
            submitted += 1
        future, futures[i] = futures[i], None
        yield future.result()
        future.release()
