"""Live views of what cells spend: the fan-out and budget widgets, and their deterministic text fallback.

Fed by `rlm_kernel.llm.events`; `SANITIZE_PATH` is the nbval sanitize file that strips summary timings.
"""

from pathlib import Path

from rlm_kernel.widgets.budget import BudgetDisplay, budget_mimebundle
from rlm_kernel.widgets.display_mode import resolve_mode
from rlm_kernel.widgets.state import FanoutSnapshot, FanoutTracker
from rlm_kernel.widgets.text import SANITIZE_CFG, budget_line, fanout_summary

SANITIZE_PATH = str(Path(__file__).with_name(SANITIZE_CFG))
"""Absolute path of `nbval_sanitize.cfg`: `pytest --nbval --nbval-sanitize-with <this>`."""

__all__ = [
    "SANITIZE_PATH",
    "BudgetDisplay",
    "FanoutSnapshot",
    "FanoutTracker",
    "budget_line",
    "budget_mimebundle",
    "fanout_summary",
    "resolve_mode",
]
