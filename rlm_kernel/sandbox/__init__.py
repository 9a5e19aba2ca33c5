"""The RestrictedPython sandbox every cell runs under: policy, guards, facades, limits and a runner.

Public API (docs/contracts.md): `restrict_ast`, `new_namespace`, `SandboxSession`, `Limits`, `cell_limits`,
`run_source`, `ExecOutcome`, `SandboxError`.
"""

from rlm_kernel.sandbox.errors import CellTimeout, LimitExceeded, SandboxError
from rlm_kernel.sandbox.facades import ALLOWED_MODULES
from rlm_kernel.sandbox.limits import Limits, cell_limits, check_source_size, consume_backstop_note
from rlm_kernel.sandbox.namespace import GUARD_NAMES, new_namespace, repair_namespace
from rlm_kernel.sandbox.policy import is_sandboxed_filename, register_sandboxed_filename, restrict_ast
from rlm_kernel.sandbox.runner import ExecOutcome, format_user_traceback, run_source
from rlm_kernel.sandbox.session import SandboxSession

__all__ = [
    "ALLOWED_MODULES",
    "GUARD_NAMES",
    "CellTimeout",
    "ExecOutcome",
    "LimitExceeded",
    "Limits",
    "SandboxError",
    "SandboxSession",
    "cell_limits",
    "check_source_size",
    "consume_backstop_note",
    "format_user_traceback",
    "is_sandboxed_filename",
    "new_namespace",
    "register_sandboxed_filename",
    "repair_namespace",
    "restrict_ast",
    "run_source",
]
