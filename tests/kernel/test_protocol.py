"""The rlm kernel against jupyter_kernel_test: every message is validated against the v5 schemas.

Needs the kernelspec installed (`rlm-kernel install --sys-prefix`), as CI does.
"""

from __future__ import annotations

import jupyter_kernel_test as jkt
import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel


def _installed() -> bool:
    try:
        KernelSpecManager().get_kernel_spec("rlm")
        return True
    except NoSuchKernel:
        return False


pytestmark = pytest.mark.skipif(not _installed(), reason="run `rlm-kernel install --sys-prefix` first")


class TestRLMKernelProtocol(jkt.KernelTests):
    kernel_name = "rlm"
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    # Cells have no `sys`; a compiler warning is Python's own way to write to stderr from a cell.
    code_stderr = "flag = 'a' is 'a'"
    completion_samples = [
        {"text": "zi", "matches": {"zip"}},
        {"text": "enumer", "matches": {"enumerate"}},
        {"text": "().__cl", "matches": set()},
    ]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "len?"
    code_generate_error = "raise ValueError('boom')"
    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n * n for n in range(4)]", "result": "[0, 1, 4, 9]"},
        {"code": "sorted({'b': 1, 'a': 2})", "result": "['a', 'b']"},
    ]
    code_display_data = [
        {"code": "display({'text/html': '<b>hi</b>'}, raw=True)", "mime": "text/html"},
        {"code": "display('plain text')", "mime": "text/plain"},
    ]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "zip"
    code_clear_output = "clear_output()"
