"""A run saved as a notebook (`rlm_result.save`, nested runs' cells) carries model-written text in markdown
cells: it is rendered to sanitised HTML there, so opening or exporting the notebook later runs no script."""

from __future__ import annotations

from rlm_kernel.rootloop.viewer import notebook_cells

HOSTILE = "<img src=x onerror=alert(1)> **bold** [x](javascript:alert(2)) <script>alert(3)</script>"


def test_nested_run_cells_hold_no_active_markup() -> None:
    tree = {
        "run": {"question": HOSTILE, "answer": HOSTILE, "termination": "final", "depth": 2, "model": "m"},
        "turns": [{"index": 1, "kind": "turn", "code": None, "reply": HOSTILE}],
    }
    sources = [cell["source"] for cell in notebook_cells(tree) if cell["cell_type"] == "markdown"]
    assert len(sources) == 3
    for source in sources:
        assert "<strong>bold</strong>" in source  # the model's Markdown still reads as Markdown
        for bad in ("onerror", "<script", 'javascript:alert(2)"', 'href="javascript'):
            assert bad not in source, source
