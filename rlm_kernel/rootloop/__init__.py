"""The autonomous root loop (`%%rlm`, `rlm_run`): system prompt, block extraction, trajectories, live view.

`loop.run_rlm(question, loaded, options=...)` returns an `RLMResult` (see `trajectory`).
"""

__all__: list[str] = []

from rlm_kernel.rootloop.prompt import register_window_setting  # noqa: E402 - after the docstring and __all__

register_window_setting()

from rlm_kernel.rootloop.subruns import register_concurrency_setting  # noqa: E402

register_concurrency_setting()

from rlm_kernel.rootloop.compaction import register_compaction_setting  # noqa: E402

register_compaction_setting()
