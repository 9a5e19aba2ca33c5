"""Issue 26 class 1: library objects model-written code made (a matplotlib figure, a DataFrame) are
framed as model output when a person's cell displays them later.

Objects of classes model code defined carry their origin in their methods; an instance of a library class
carries nothing, so before the fix a `--shared` block's `fig` or `df`, shown by the person's next cell (its
last expression, `display(fig)`, a handle's `update`, `plt.show()`), went out unframed with the person's
trust — and a figure can draw anything a picture can (the kernel's answer box). Now they are recorded when
model code leaves them (sandbox/made.py) and framed wherever they are shown. Controls: the person's own
objects, also when model code only bound them under another name, are not framed.
A real kernel, scripted runs against tests/llm_server.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kernel_client import Execution, KernelHarness, kernel_with_llm_server
from tests.llm_server import LLMTestServer
from tests.output.test_model_label_kernel import _labelled
from tests.repl.conftest import llm_env
from tests.rootloop.script import Script, repl
from tests.sandbox.test_trust_chain_kernel import agent_cell

FIG = (
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_facecolor('green')\n"
    "ax.text(0.1, 0.5, 'FINAL ANSWER 42')\n"
)
FRAME = "import pandas as pd\ndf = pd.DataFrame({'answer': ['FINAL ANSWER 42']})\n"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LLMTestServer, KernelHarness]]:
    with kernel_with_llm_server(llm_env) as served:
        yield served


def _run(served, code: str, flags: str = "--shared") -> Execution:
    server, kernel = served
    server.reset()
    server.reply_with(Script(root=[repl(code)]))
    ex = kernel.execute(f"%%rlm {flags} --max-iterations 2 --max-no-code-turns 1\nMake it.", timeout=180)
    assert ex.ok, str(ex)
    errors = kernel.execute("[t.error for t in rlm_result.trajectory if t.code is not None]", timeout=60)
    assert "None" in str(errors.result) and "Error" not in str(errors.result), errors.result
    return ex


def _shown(ex: Execution, mime: str) -> list[dict]:
    found = ex.display + ([ex.result_data] if ex.result_data else [])
    return [d for d in found if mime in d]


# (what model code leaves, the person's later cell, the representation that must be framed)
LEFT = {
    "figure_last_expression": (FIG, "fig", "image/png"),
    "figure_display": (FIG, "display(fig)", "image/png"),
    "figure_through_its_axes": (FIG + "del fig", "ax.figure", "image/png"),
    "figure_in_a_dict": (FIG + "charts = {'main': fig}\ndel fig", "charts['main']", "image/png"),
    "figure_in_a_plain_object": (
        FIG + "class Report:\n    pass\nreport = Report()\nreport.chart = fig\ndel fig",
        "report.chart",
        "image/png",
    ),
    "figure_from_a_model_function": (
        "import matplotlib.pyplot as plt\ndef chart():\n    f, a = plt.subplots()\n"
        "    a.text(0.1, 0.5, 'FINAL ANSWER 42')\n    return f",
        "c = chart()\nc",
        "image/png",
    ),
    "figure_left_open_by_a_model_function_then_plt_show": (
        "import matplotlib.pyplot as plt\ndef chart():\n    plt.plot([1, 2])\n"
        "    plt.title('FINAL ANSWER 42')",
        "chart()\nplt.show()",
        "image/png",
    ),
    "frame_last_expression": (FRAME, "df", "text/html"),
    "frame_display": (FRAME, "display(df)", "text/html"),
    "frame_in_a_list": (FRAME + "tables = [df]\ndel df", "tables[0]", "text/html"),
    "frame_from_a_series": (FRAME + "s = df['answer'].to_frame()", "s", "text/html"),
    "handle_update": (FRAME, "h = display('loading', display_id=True)\nh.update(df)", "text/html"),
}


@pytest.mark.parametrize("name", list(LEFT))
def test_a_library_object_model_code_made_is_framed_when_the_person_shows_it(served, name: str) -> None:
    _, kernel = served
    model, person, mime = LEFT[name]
    _run(served, model)
    ex = kernel.execute(person, timeout=120)
    assert ex.ok, (person, str(ex))
    shown = _shown(ex, mime)
    assert shown, (person, ex.messages)
    for data in shown:
        assert _labelled(data), (name, data)


def test_an_object_model_code_stored_in_the_persons_dict_is_framed(served) -> None:
    _, kernel = served
    assert kernel.execute("box = {}", timeout=60).ok
    _run(served, FRAME + "box['table'] = df\ndel df")
    ex = kernel.execute("box['table']", timeout=60)
    assert ex.ok, str(ex)
    assert ex.result_data and _labelled(ex.result_data), ex.result_data


def test_what_a_plain_runs_namespace_holds_is_framed(served) -> None:
    """A run without --shared keeps its namespace in `rlm_result.namespace` (sub-RLMs run the same way)."""
    _, kernel = served
    _run(served, FRAME + FIG, flags="")
    for expr in ("rlm_result.namespace['df']", "rlm_result.namespace['fig']"):
        ex = kernel.execute(expr, timeout=60)
        assert ex.ok, str(ex)
        assert ex.result_data and _labelled(ex.result_data), (expr, ex.result_data)


def test_an_agent_cells_objects_are_framed_when_the_person_shows_them(served) -> None:
    _, kernel = served
    ex = agent_cell(kernel, FRAME.replace("df =", "agent_df =") + FIG.replace("fig,", "agent_fig,"))
    assert ex.ok, str(ex)
    for expr in ("agent_df", "agent_fig"):
        shown = kernel.execute(expr, timeout=60)
        assert shown.ok, str(shown)
        assert shown.result_data and _labelled(shown.result_data), (expr, shown.result_data)


def test_the_persons_own_objects_stay_unframed(served) -> None:
    """Model code that only binds the person's frame and figure under other names (or reads them) does not
    make them model output; the person's own new objects are not framed either."""
    _, kernel = served
    setup = kernel.execute(
        "import pandas as pd\nimport matplotlib.pyplot as plt\nmine = pd.DataFrame({'a': [1, 2]})\n"
        "my_fig, my_ax = plt.subplots()\nmy_ax.plot([1, 2])\nplt.close(my_fig)",
        timeout=60,
    )
    assert setup.ok, str(setup)
    _run(served, "alias = mine\npair = (mine, my_fig)\nn = len(mine)")
    for expr in ("mine", "alias", "my_fig", "pd.DataFrame({'b': [3]})"):
        ex = kernel.execute(expr, timeout=60)
        assert ex.ok, (expr, str(ex))
        assert ex.result_data and not _labelled(ex.result_data), (expr, ex.result_data)


def test_a_model_made_figure_in_user_expressions_is_framed(served) -> None:
    """user_expressions (a frontend's variable inspector) format values as a display does."""
    _, kernel = served
    _run(served, FIG)
    ex = kernel.execute("1", timeout=60, user_expressions={"f": "fig", "n": "3"})
    got = ex.reply["user_expressions"]
    assert got["f"]["status"] == "ok" and _labelled(got["f"]["data"]), got["f"]
    assert not _labelled(got["n"]["data"]), got["n"]


def test_a_name_an_agent_once_bound_holds_the_persons_object_later(served) -> None:
    """`%rlm agent` lists names across agents' cells; a later agent cell does not frame the person's own
    object the person has since bound to such a name."""
    _, kernel = served
    assert agent_cell(kernel, FRAME.replace("df =", "shared_name =")).ok
    assert kernel.execute("import pandas as pd\nshared_name = pd.DataFrame({'mine': [1]})", timeout=60).ok
    assert agent_cell(kernel, "other = 1").ok
    ex = kernel.execute("shared_name", timeout=60)
    assert ex.ok and ex.result_data and not _labelled(ex.result_data), ex.result_data
