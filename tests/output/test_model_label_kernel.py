"""Issue 26 class 1, red team: pictures from model-written code cannot pass as the kernel's own displays.

Cleaning keeps pictures, so an SVG `<rect fill=green>` with "FINAL ANSWER · answer accepted by the FINAL gate"
in it, or a PNG of the same, looks exactly like the kernel's answer box. Every rich bundle model code makes —
its `display()` in a `%%rlm` run or an MCP agent's cell, or an object of a class it defined that a person's
cell displays later — is shown inside a frame with a caption only the kernel can draw (cell output can have no
style). Controls: the person's own SVG, PNG and HTML are not labelled; the kernel's own run view is not.
A real kernel, scripted runs against tests/llm_server.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rlm_kernel.output import MODEL_LABEL
from tests.kernel_client import Execution, KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl

FAKE_BOX = (
    "<svg width='400' height='60'><rect width='400' height='60' fill='white' stroke='#2e7d32' "
    "stroke-width='2'/><text x='10' y='20' fill='#2e7d32'>FINAL ANSWER</text>"
    "<text x='10' y='45'>rlm kernel · answer accepted by the FINAL gate: 42</text></svg>"
)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

# (what model code displays, the MIME type whose picture must be labelled)
PICTURES = {
    "svg_box": (f"display({{'image/svg+xml': {FAKE_BOX!r}}}, raw=True)", "image/svg+xml"),
    "png": (f"display({{'image/png': {PNG!r}, 'text/plain': 'box'}}, raw=True)", "image/png"),
    "html": ("display({'text/html': '<b>FINAL ANSWER</b>: 42'}, raw=True)", "text/html"),
    "markdown": ("display({'text/markdown': '**FINAL ANSWER**: 42'}, raw=True)", "text/html"),
    "latex": ("display({'text/latex': '$\\\\mathbf{FINAL\\\\ ANSWER: 42}$'}, raw=True)", "text/latex"),
    "object_repr_svg": (
        f"class Box:\n    def _repr_svg_(self):\n        return {FAKE_BOX!r}\ndisplay(Box())",
        "image/svg+xml",
    ),
    "matplotlib": (
        "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_facecolor('green')\n"
        "ax.text(0.1, 0.5, 'FINAL ANSWER 42')\nplt.show()",
        "image/png",
    ),
}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        yield served


def _run(served, code: str) -> Execution:
    server, kernel = served
    server.reset()
    server.reply_with(Script(root=[repl(code)]))
    ex = kernel.execute("%%rlm --shared --max-iterations 2 --max-no-code-turns 1\nShow it.", timeout=180)
    assert ex.ok, str(ex)
    return ex


def _outputs(ex: Execution, *, kernel_views: bool = False) -> list[dict]:
    """Bundles of the request; without the kernel's own run view (its display id) unless asked."""
    messages = [
        m for m in ex.messages if m["msg_type"] in ("display_data", "update_display_data", "execute_result")
    ]
    view_ids = {
        m["content"].get("transient", {}).get("display_id")
        for m in messages
        if "<b>RLM run</b>" in str(m["content"]["data"].get("text/html", ""))
    } - {None}
    return [
        m["content"]["data"]
        for m in messages
        if kernel_views == (m["content"].get("transient", {}).get("display_id") in view_ids)
    ]


def _labelled(data: dict) -> bool:
    html = str(data.get("text/html", ""))
    return MODEL_LABEL.replace("'", "&#x27;") in html and "border-left:3px dashed" in html


@pytest.mark.parametrize("name", list(PICTURES))
def test_model_codes_pictures_are_labelled(served, name: str) -> None:
    code, mime = PICTURES[name]
    ex = _run(served, code)
    shown = [d for d in _outputs(ex) if mime in d or "text/html" in d]
    assert shown, f"the model's display did not reach the cell: {ex.messages}"
    for data in shown:
        assert _labelled(data), data
    for data in _outputs(ex, kernel_views=True):
        assert not _labelled(data), "the kernel's own run view is not labelled"


def test_an_object_model_code_made_is_labelled_when_the_person_shows_it(served) -> None:
    _, kernel = served
    _run(served, f"class Card:\n    def _repr_svg_(self):\n        return {FAKE_BOX!r}\ncard = Card()")
    ex = kernel.execute("card", timeout=60)
    assert ex.ok, str(ex)
    assert ex.result_data and _labelled(ex.result_data), ex.result_data


def test_the_persons_own_pictures_are_not_labelled(served) -> None:
    _, kernel = served
    for code in (
        f"display({{'image/svg+xml': {FAKE_BOX!r}}}, raw=True)",
        f"display({{'image/png': {PNG!r}, 'text/plain': 'box'}}, raw=True)",
        "display({'text/html': '<b>my table</b>'}, raw=True)",
        "import pandas as pd\npd.DataFrame({'a': [1, 2]})",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()",
    ):
        ex = kernel.execute(code, timeout=60)
        assert ex.ok, (code, str(ex))
        found = ex.display + ([ex.result_data] if ex.result_data else [])
        assert found, code
        assert not any(_labelled(d) for d in found), (code, found)


# displays model code leaves behind, run by the person's next cell: no model frame is on the stack then
WRAPPED = {
    "partial_of_display": (
        "import functools\n"
        f"summary = functools.partial(display, {{'image/svg+xml': {FAKE_BOX!r}}}, raw=True)",
        "summary()",
    ),
    "map_of_display": (
        "import functools\n"
        f"lazy = map(functools.partial(display, raw=True), [{{'image/svg+xml': {FAKE_BOX!r}}}])",
        "list(lazy)",
    ),
    "partial_of_a_handle_update": (
        "import functools\nh = display({'text/plain': 'loading'}, raw=True, display_id=True)\n"
        f"refresh = functools.partial(h.update, {{'image/svg+xml': {FAKE_BOX!r}}}, raw=True)",
        "refresh()",
    ),
    # the sandbox's operator.methodcaller is kernel Python code that the person's cell calls by name: its
    # own frame sat where the display function's should be (third red team)
    "methodcaller_of_a_handle_update": (
        "import operator\nh = display({'text/plain': 'loading'}, raw=True, display_id=True)\n"
        f"refresh = operator.methodcaller('update', {{'image/svg+xml': {FAKE_BOX!r}}}, raw=True)",
        "refresh(h)",
    ),
    "methodcaller_of_a_handle_display": (
        "import operator\nh = display({'text/plain': 'loading'}, raw=True, display_id=True)\n"
        f"again = operator.methodcaller('display', {{'image/svg+xml': {FAKE_BOX!r}}}, raw=True)",
        "again(h)",
    ),
}


@pytest.mark.parametrize("name", list(WRAPPED))
def test_a_display_model_code_wrapped_is_labelled_when_the_person_runs_it(served, name: str) -> None:
    _, kernel = served
    model, person = WRAPPED[name]
    _run(served, model)
    ex = kernel.execute(person, timeout=60)
    assert ex.ok, str(ex)
    shown = [d for d in ex.display if "image/svg+xml" in d]
    assert shown, ex.display
    assert all(_labelled(d) for d in shown), shown


def test_the_persons_own_display_functions_are_not_labelled(served) -> None:
    _, kernel = served
    for code in (
        f"def show():\n    display({{'image/svg+xml': {FAKE_BOX!r}}}, raw=True)\nshow()",
        "h2 = display({'text/plain': 'x'}, raw=True, display_id=True)\n"
        f"h2.update({{'image/svg+xml': {FAKE_BOX!r}}}, raw=True)",
        f"items = [{{'image/svg+xml': {FAKE_BOX!r}}}]\ndisplay(*items, raw=True)",
        "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])\nplt.show()",
    ):
        ex = kernel.execute(code, timeout=60)
        assert ex.ok, (code, str(ex))
        assert ex.display, code
        assert not any(_labelled(d) for d in ex.display), (code, ex.display)
