"""The analysis helpers load numpy, bm25s and the extractors' patterns on first use, not at kernel start —
and that first use works inside a cell under a small memory cap and tight time limits (the import is kernel
work: `rlm_kernel.analysis.heavy`, `rlm_kernel.sandbox.limits.uncounted`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.analysis.conftest import tier_env
from tests.analysis.test_map_reduce import counting
from tests.kernel_client import KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer

# RLIMIT_AS is the kernel's size at its first cell plus this: numpy alone maps ~120 MB (OpenBLAS), so its
# import would fail here if it were charged to the cell
SMALL_CAP_MB = "48"
JS = "function alpha(x) { return x + 1 }\nconst beta = (y) => y * 2\nclass G { gamma() { return 3 } }\n"


def _maps(kernel: KernelHarness) -> str:
    return Path(f"/proc/{kernel.km.provisioner.process.pid}/maps").read_text()


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    def env(server: LLMTestServer) -> dict[str, str]:
        return {**tier_env(server), "RLM_MEMORY_MB": SMALL_CAP_MB, "RLM_CPU_SECONDS": "5"}

    with kernel_with_llm_server(env) as (server, kernel):
        server.reply_with(counting)
        yield server, kernel


def _probe(kernel: KernelHarness, expr: str) -> object:
    ex = kernel.execute(f"print(json.dumps({expr}))", timeout=120)
    assert ex.ok, ex
    return json.loads(ex.stdout.strip().splitlines()[-1])


def test_first_use_of_each_helper_under_a_small_memory_cap(
    served: tuple[LLMTestServer, KernelHarness],
) -> None:
    _server, kernel = served
    # the first cell fixes the memory baseline
    assert kernel.execute("import json\nwarm = 'x' * 1000", timeout=60).ok
    assert "_multiarray_umath" not in _maps(kernel), "numpy was imported at kernel start"

    doc = "".join(f"line {i} filler words\n" for i in range(400))
    doc = doc.replace("line 300 filler", "line 300 needle")
    assert kernel.execute(f"doc = {doc!r}").ok
    hits = _probe(kernel, "find_relevant(doc, 'needle', top_k=1)")
    assert isinstance(hits, list) and "line 300 needle" in hits[0][0]
    assert "_multiarray_umath" in _maps(kernel)  # loaded by that call, inside the capped cell

    names = _probe(kernel, f"[f['name'] for f in extract_functions({JS!r}, 'javascript', engine='regex')]")
    assert names == ["alpha", "beta", "gamma"]
    names = _probe(kernel, f"[f['name'] for f in extract_functions({JS!r}, 'javascript')]")
    assert names == ["alpha", "beta", "gamma"]

    text = "apple pie\n" * 30 + "pear\n" * 30
    answer = _probe(kernel, f"map_reduce({text!r}, 'COUNT', 'SUM', n_chunks=3)")
    assert answer == "30"


def test_the_cap_still_holds_after_the_lazy_loads(served: tuple[LLMTestServer, KernelHarness]) -> None:
    _server, kernel = served
    assert kernel.execute("find_relevant('a b c', 'b')").ok
    ex = kernel.execute("big = 'a' * (150 * 1024 * 1024)", timeout=60)
    assert ex.error_name == "MemoryError", ex
    assert kernel.execute("len(warm)").result == "1000"


def test_the_data_libraries_load_under_the_same_cap(served: tuple[LLMTestServer, KernelHarness]) -> None:
    """The same family: `import pandas` loads pandas and matplotlib as kernel work (sandbox/data/)."""
    _server, kernel = served
    ex = kernel.execute(
        "import pandas as pd\nimport matplotlib.pyplot as plt\ndf = pd.DataFrame({'a': [1, 2, 3]})\n"
        "fig = plt.figure()\nplt.close(fig)\nint(df['a'].sum())",
        timeout=180,
    )
    assert ex.ok and ex.result == "6", ex
    ex = kernel.execute("big = 'a' * (150 * 1024 * 1024)", timeout=60)
    assert ex.error_name == "MemoryError", ex
