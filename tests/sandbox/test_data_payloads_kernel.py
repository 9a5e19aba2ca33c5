"""The data-stack payloads through a real `rlm` kernel, plus what only a kernel shows: inline PNG figures,
DataFrame HTML, both under the output cap, and the memory and CPU limits around numpy.

Canaries (a fake API key in the kernel's environment, a secret file) never appear in any output; the kernel
is alive and usable after every payload.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_client import KernelHarness
from tests.sandbox.data_payloads import DATA_PAYLOADS, PRELUDE
from tests.sandbox.payloads import CANARY_VALUE, Payload
from tests.sandbox.test_payloads_kernel import KERNEL_ENV, check, run_payload

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = Path(tmp_path_factory.mktemp("canary")) / "secret.txt"
    path.write_text(f"api_key={CANARY_VALUE}\n")
    return str(path)


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelHarness]:
    harness = KernelHarness(env=KERNEL_ENV)
    try:
        yield harness
    finally:
        harness.shutdown()


@pytest.mark.parametrize("payload", DATA_PAYLOADS, ids=[f"{p.category}-{p.id}" for p in DATA_PAYLOADS])
def test_data_payload_in_kernel(kernel: KernelHarness, payload: Payload, secret_file: str) -> None:
    status, name, text = run_payload(kernel, payload, secret_file)
    check(payload, status, name, text)
    alive = kernel.execute("print(6 * 7)", timeout=60)
    assert alive.ok and alive.stdout == "42\n", f"kernel not usable after {payload.id}: {alive}"


def _pngs(ex) -> list[bytes]:
    return [base64.b64decode(d["image/png"]) for d in ex.display if "image/png" in d]


def test_figures_are_shown_inline_as_png(kernel: KernelHarness) -> None:
    left_open = kernel.execute(PRELUDE + "plt.plot([1, 2, 3])\nplt.title('open at the end')")
    assert left_open.ok, left_open
    assert len(_pngs(left_open)) == 1 and _pngs(left_open)[0].startswith(PNG)
    shown = kernel.execute(
        "fig, axes = plt.subplots(1, 2)\naxes[0].bar(['a'], [1])\nplt.show()\nprint('after')"
    )
    assert shown.ok and shown.stdout == "after\n" and len(_pngs(shown)) == 1, shown
    as_value = kernel.execute("fig, ax = plt.subplots()\nax.hist([1, 2, 2])\nfig")
    assert as_value.ok and as_value.result_data and "image/png" in as_value.result_data, as_value
    assert not _pngs(as_value), "a figure shown as the cell's value is not shown again"
    nothing = kernel.execute("1 + 1")
    assert nothing.result == "2" and not nothing.display, "figures are closed once shown"


def test_dataframe_is_shown_as_html(kernel: KernelHarness) -> None:
    ex = kernel.execute(PRELUDE + "pd.DataFrame({'service': ['api', 'db'], 'incidents': [3, 1]})")
    assert ex.ok and ex.result_data is not None, ex
    assert "<table" in ex.result_data["text/html"] and "incidents" in ex.result_data["text/html"]


def test_cell_functions_run_inside_the_cell_when_drawing(kernel: KernelHarness) -> None:
    code = PRELUDE + (
        "calls = []\n"
        "def fmt(x, pos):\n"
        "    calls.append(x)\n"
        "    return f'{x:.0f}!'\n"
        "fig, ax = plt.subplots()\n"
        "ax.plot([1, 2, 3])\n"
        "ax.xaxis.set_major_formatter(fmt)\n"
        "plt.show()\n"
        "print(len(calls) > 0)"
    )
    ex = kernel.execute(code)
    assert ex.ok and ex.stdout == "True\n" and len(_pngs(ex)) == 1, ex


@pytest.fixture(scope="module")
def small_output_kernel() -> Iterator[KernelHarness]:
    harness = KernelHarness(env={**KERNEL_ENV, "RLM_OUTPUT_BYTES": "20000"})
    try:
        yield harness
    finally:
        harness.shutdown()


def test_output_cap_applies_to_dataframe_html(small_output_kernel: KernelHarness) -> None:
    ex = small_output_kernel.execute(
        PRELUDE
        + "pd.set_option('display.max_rows', 5000)\npd.DataFrame({'a': range(3000), 'b': ['x' * 20] * 3000})"
    )
    assert ex.ok, ex
    assert ex.result_data is not None and "text/html" not in ex.result_data, (
        "rich output over the cap is dropped"
    )
    assert "output truncated" in ex.result_data["text/plain"]


def test_output_cap_applies_to_figures(small_output_kernel: KernelHarness) -> None:
    ex = small_output_kernel.execute(
        PRELUDE
        + "fig, ax = plt.subplots(figsize=(12, 9))\nax.scatter(np.random.default_rng(0).random(5000), "
        "np.random.default_rng(1).random(5000))\nplt.show()"
    )
    assert ex.ok, ex
    assert not _pngs(ex), "a figure over the output cap is not sent"
    assert "output truncated" in ex.all_text


def test_huge_allocations_fail_cleanly(rlm_kernel_factory) -> None:
    harness: KernelHarness = rlm_kernel_factory(env={**KERNEL_ENV, "RLM_MEMORY_MB": "2048"})
    assert harness.execute(PRELUDE + "a = np.arange(3)").ok
    for code in (
        "np.zeros(10**12)",
        "np.ones(10**9)",  # 8 GB: over RLM_MEMORY_MB, refused before allocating
        "x = np.ones((30000, 1)) * np.ones((1, 30000))",  # 7.2 GB made by broadcasting: RLIMIT_AS
        "np.repeat(np.arange(1000), 10**7)",
        "df = pd.DataFrame({'k': np.zeros(40000)})\ndf.merge(df, how='cross')",  # 1.6e9 rows
    ):
        ex = harness.execute(code, timeout=180)
        assert ex.error_name in ("MemoryError", "LimitExceeded"), (code, str(ex))
        alive = harness.execute("print(int(a.sum()))", timeout=60)
        assert alive.ok and alive.stdout == "3\n", (code, str(alive))


def test_long_vectorised_operation_hits_the_backstop(rlm_kernel_factory) -> None:
    """One numpy call that runs for minutes in C: the timers cannot interrupt it; RLIMIT_CPU stops the
    kernel, which restarts and says why."""
    env = {**KERNEL_ENV, "RLM_CPU_SECONDS": "1", "RLM_CPU_BACKSTOP_SECONDS": "2"}
    harness: KernelHarness = rlm_kernel_factory(env=env)
    assert harness.execute(PRELUDE + "x = np.ones(10**6)").ok  # the first import is not counted
    msg_id = harness.kc.execute("np.convolve(x, x)")  # 10**12 multiply-adds in one C call
    deadline = time.monotonic() + 120
    while harness.is_alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not harness.is_alive(), "the backstop did not stop the C loop"
    assert msg_id
    harness.restart()
    ex = harness.execute("print('back')", timeout=60)
    assert ex.ok and ex.stdout == "back\n"
    assert "C-level operation" in ex.stderr, ex.stderr
