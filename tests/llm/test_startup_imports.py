"""Kernel start-up stays light: httpx and aiohttp are imported with the first HTTP client, not at import."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.llm.conftest import MakeClient
from tests.llm_server import LLMTestServer

HEAVY = ("httpx", "httpx_aiohttp", "aiohttp")

START = """
import json, sys
import rlm_kernel.kernel, rlm_kernel.shell
import rlm_kernel.repl.cell_magics, rlm_kernel.llm.settings_magic
import rlm_kernel.widgets.widget_magics, rlm_kernel.llm.local
from rlm_kernel import llm
llm.get_session_budget(); llm.load_config()
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})))
"""


def test_kernel_modules_import_without_the_http_stack() -> None:
    out = subprocess.run(
        [sys.executable, "-c", START.format(heavy=set(HEAVY))], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_first_call_imports_it_and_works(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    client = make_client()
    assert client.complete("lazy imports").text == "lazy imports"
    assert all(name in sys.modules for name in HEAVY)
