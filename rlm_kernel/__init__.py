"""rlm-kernel: a Jupyter kernel that is a Recursive Language Model REPL.

Every cell runs under a RestrictedPython sandbox; helpers reach LLMs through `rlm_kernel.llm`.
"""

__version__ = "0.2.0.dev0"  # the one place the version lives: the wheel, the banner and %rlm version read it
KERNEL_NAME = "rlm"
DISPLAY_NAME = "RLM (Python, sandboxed)"

__all__ = ["DISPLAY_NAME", "KERNEL_NAME", "__version__", "view"]


def view(source: object) -> object:
    """A saved run (`view("runs/x.jsonl")`) or an `RLMResult` as the collapsible trajectory timeline."""
    from rlm_kernel.rootloop.viewer import view as _view

    return _view(source)
