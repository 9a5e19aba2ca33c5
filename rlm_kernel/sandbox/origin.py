"""Whose code is running: a person's cell, or model-written code (a root loop or sub-RLM turn).

Model-written code may not change the kernel: magics, `%rlm set`, `allow_secrets=True` and other settings
refuse while `model_code_running()` is true. The root loop wraps every block of model code in `model_code()`.
The count is process-wide on purpose: while model code runs anywhere (a sub-RLM on a worker thread, another
session's root loop), the kernel-changing commands refuse everywhere, failing closed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rlm_kernel.sandbox.errors import SandboxError

__all__ = ["ModelCodeRefused", "model_code", "model_code_running", "refuse_in_model_code"]

_lock = threading.Lock()
_running = 0  # blocks of model code running now, in any thread (sub-RLMs may run on worker threads)


class ModelCodeRefused(SandboxError):
    """Model-written code tried something only a person's cell may do (shown as `SandboxError`)."""


ModelCodeRefused.__name__ = ModelCodeRefused.__qualname__ = "SandboxError"


@contextmanager
def model_code() -> Iterator[None]:
    """Mark the code run inside this block as model-written (nests; counts across threads)."""
    global _running
    with _lock:
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1


def model_code_running() -> bool:
    """True while any block of model-written code runs."""
    return _running > 0


def refuse_in_model_code(what: str) -> None:
    """Raise `ModelCodeRefused` naming `what` if model-written code is running."""
    if _running > 0:
        raise ModelCodeRefused(
            f"{what} is not available to model-written code (root loop or sub-RLM): only the person's own "
            "cells may change the kernel"
        )
