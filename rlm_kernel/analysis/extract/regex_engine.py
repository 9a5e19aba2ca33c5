"""Regex engine (SPEC-01.16): line-anchored patterns per language over masked text, linear bracket matching.

Never raises on odd input and never goes quadratic; one module per language does the work.
"""

from __future__ import annotations

from rlm_kernel.analysis.extract.regex_go import extract_go
from rlm_kernel.analysis.extract.regex_js import extract_javascript
from rlm_kernel.analysis.extract.regex_python import extract_python

__all__ = ["extract"]


def extract(text: str, language: str) -> list[dict]:
    """Functions of `text` (newlines normalised to `\\n`) in "python", "go", "javascript" or "typescript"."""
    if language == "python":
        return extract_python(text)
    if language == "go":
        return extract_go(text)
    return extract_javascript(text, typescript=language == "typescript")
