"""Output caps on execute_result and display_data bundles, through a real kernel (RLM_OUTPUT_BYTES=1000).

Stream output was capped already; results and `display()` now go through `SandboxSession.cap_mimebundle`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kernel_client import KernelHarness

CAP = 1000
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def capped() -> Iterator[KernelHarness]:
    harness = KernelHarness(env={"RLM_OUTPUT_BYTES": str(CAP), "RLM_DISPLAY": "widgets"})
    try:
        yield harness
    finally:
        harness.shutdown()


def _size(data: dict) -> int:
    return max(len(str(v).encode()) for v in data.values())


def test_huge_result_repr_is_capped(capped: KernelHarness) -> None:
    ex = capped.execute("'x' * 1_000_000", timeout=60)
    assert ex.ok, str(ex)
    assert set(ex.result_data) == {"text/plain"}
    assert ex.result.startswith("'xxx") and len(ex.result.encode()) < CAP + 200
    assert "[output truncated: " in ex.result and "RLM_OUTPUT_BYTES" in ex.result
    dropped = int(ex.result.split("[output truncated: ")[1].split(" bytes")[0])
    assert dropped >= 1_000_000 - CAP


def test_huge_display_html_is_capped(capped: KernelHarness) -> None:
    code = (
        "class Big:\n"
        "    def _repr_html_(self):\n"
        "        return '<b>' + 'y' * 500_000 + '</b>'\n"
        "    def __repr__(self):\n"
        "        return 'Big()'\n"
        "display(Big())\n"
        "print('after')"
    )
    ex = capped.execute(code, timeout=60)
    assert ex.ok, str(ex)
    assert len(ex.display) == 1
    data = ex.display[0]
    assert "text/html" not in data and _size(data) < CAP + 200
    assert data["text/plain"].startswith("Big()") and "[output truncated: " in data["text/plain"]
    assert "after" not in ex.stdout  # the cap was used up by the display: later output is dropped too
    assert "output truncated" in ex.stdout


def test_results_and_displays_over_several_outputs_share_the_cap(capped: KernelHarness) -> None:
    code = "display('a' * 600)\ndisplay('b' * 600)\n'c' * 10"
    ex = capped.execute(code, timeout=60)
    assert ex.ok, str(ex)
    assert ex.display[0]["text/plain"] == repr("a" * 600)
    assert "[output truncated" in ex.display[1]["text/plain"]
    assert ex.result.startswith("[output truncated") or "[output truncated" in ex.result


def test_small_outputs_are_untouched(capped: KernelHarness) -> None:
    ex = capped.execute(
        "class H:\n    def _repr_html_(self):\n        return '<i>hi</i>'\ndisplay(H())\n41 + 1"
    )
    assert ex.ok, str(ex)
    assert ex.display[0]["text/html"] == "<i>hi</i>" and "text/plain" in ex.display[0]
    assert ex.result == "42" and "truncated" not in ex.all_text
    # every cell starts with the whole cap again
    ex = capped.execute("'z' * 900")
    assert ex.result == repr("z" * 900)


def test_widget_comm_messages_are_not_capped(capped: KernelHarness) -> None:
    ex = capped.execute("%rlm budget", timeout=60)
    assert ex.ok, str(ex)
    assert WIDGET_VIEW in (ex.result_data or {}), str(ex)
    opened = [m for m in ex.messages if m["msg_type"] == "comm_open"]
    assert opened, "the budget widget opened no comm"
    # widget state travels in comm messages, outside the output cap, complete: far more than the cap
    assert all("state" in m["content"]["data"] for m in opened)
    sizes = sum(len(str(m["content"])) for m in ex.messages if m["msg_type"].startswith("comm_"))
    assert sizes > 10 * CAP
    assert "truncated" not in (ex.result or "") and "truncated" not in ex.stdout


def test_updated_display_is_charged_for_its_latest_bundle(capped: KernelHarness) -> None:
    """A live display redrawn many times (update_display_data) uses the cap once, not once per update."""
    code = "h = display('a' * 600, display_id=True)\nfor k in range(6):\n    h.update(str(k) * 600)\n"
    ex = capped.execute(code, timeout=60)
    assert ex.ok, str(ex)
    assert len(ex.display) == 7
    assert ex.display[-1]["text/plain"] == repr("5" * 600)
    assert "truncated" not in ex.all_text
    # a second display alongside still counts: 600 + 600 is over the 1000-byte cap
    ex = capped.execute("h = display('a' * 600, display_id=True)\ndisplay('b' * 600)")
    assert "[output truncated" in ex.display[1]["text/plain"]
