"""The project's base error.

Every error the kernel raises on purpose derives from `RLMError`; each subpackage keeps its own in
`errors.py`.
"""

__all__ = ["RLMError"]


class RLMError(Exception):
    """Base of every deliberate rlm-kernel error. Carries text only, never live objects."""
