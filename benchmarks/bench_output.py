"""What cleaning display output costs (rlm_kernel/output): nh3 against bleach on the same HTML table, the
cleaning against pandas making that table, and a DataFrame's display round trip in the rlm kernel against
stock ipykernel — all measured in the same run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from benchmarks.common import Figure
from tests.kernel_client import KernelHarness

__all__ = ["run"]

TABLE_CELL = (
    "import pandas as pd\n"
    "frame = pd.DataFrame({{f'c{{j}}': [f'v{{i}}<{{j}}>' for i in range({rows})] for j in range(8)}})\n"
    "display(frame)"
)


def _best(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _table_html(rows: int) -> str:
    import pandas as pd

    frame = pd.DataFrame({f"c{j}": [f"v{i}<{j}>" for i in range(rows)] for j in range(8)})
    return frame.to_html()


def _bleach_clean() -> Callable[[str], str]:
    import bleach

    from rlm_kernel.output.sanitise import _HTML_ATTRIBUTES, _HTML_TAGS

    attributes = {tag: sorted(names) for tag, names in _HTML_ATTRIBUTES.items()}
    return lambda html: bleach.clean(html, tags=_HTML_TAGS, attributes=attributes, strip=True)


def _in_process(quick: bool) -> list[Figure]:
    import pandas as pd

    from rlm_kernel.output import clean_bundle
    from rlm_kernel.output.sanitise import clean_html

    rows = 2_000 if quick else 10_000
    reps = 3 if quick else 7
    html = _table_html(rows)
    megabytes = len(html) / 1e6
    frame = pd.DataFrame({f"c{j}": [f"v{i}<{j}>" for i in range(rows)] for j in range(8)})
    render = _best(frame.to_html, reps)
    nh3_time = _best(lambda: clean_html(html), reps)
    small = pd.DataFrame({f"c{j}": [f"v{i}<{j}>" for i in range(60)] for j in range(8)})
    bundle = {"text/html": small._repr_html_(), "text/plain": repr(small)}
    small_render = _best(small._repr_html_, reps * 5)
    small_clean = _best(lambda: clean_bundle(bundle), reps * 5)
    figures = [
        Figure(
            name="clean a 60-row DataFrame's display bundle vs pandas making its HTML",
            value=small_clean,
            unit="s",
            baseline=small_render,
            baseline_name="DataFrame._repr_html_",
            target="<= 1x",
            met=small_clean / small_render <= 1,
            note="what every displayed DataFrame pays for the output policy (pandas' default 60 rows)",
        ),
        Figure(
            name=f"sanitise a {megabytes:.1f} MB HTML table (nh3) vs pandas rendering it",
            value=nh3_time,
            unit="s",
            baseline=render,
            baseline_name="DataFrame.to_html",
            target="<= 1x",
            met=nh3_time / render <= 1,
            note=f"{rows:,} rows x 8 columns; {nh3_time / megabytes * 1e3:.1f} ms per MB",
        ),
    ]
    try:
        clean = _bleach_clean()
    except ImportError:
        return figures
    bleach_time = _best(lambda: clean(html), max(1, reps // 2))
    figures.append(
        Figure(
            name=f"sanitise a {megabytes:.1f} MB HTML table: nh3 vs bleach",
            value=nh3_time,
            unit="s",
            baseline=bleach_time,
            baseline_name="bleach 6 (same allowlist)",
            note="the sanitiser chosen against the other well-kept one",
        )
    )
    return figures


def _timed(harness: KernelHarness, code: str) -> float:
    t0 = time.perf_counter()
    ex = harness.execute(code, timeout=300)
    elapsed = time.perf_counter() - t0
    if not ex.ok:
        raise RuntimeError(f"benchmark cell failed in {harness.kernel_name}:\n{ex}")
    return elapsed


def _kernels(quick: bool) -> list[Figure]:
    reps = 5 if quick else 15
    figures = []
    rlm = KernelHarness("rlm")
    base = KernelHarness("python3")
    try:
        for rows, what in (
            (60, "a DataFrame's display (60 rows)"),
            (5_000, "a 5,000-row DataFrame's display"),
        ):
            code = TABLE_CELL.format(rows=rows)
            for harness in (rlm, base):
                _timed(harness, "import pandas as pd\npd.set_option('display.max_rows', 10_000)")
                _timed(harness, code)  # warm-up
            r: list[float] = []
            b: list[float] = []
            for _ in range(reps):
                r.append(_timed(rlm, code))
                b.append(_timed(base, code))
            ratios = [x / y for x, y in zip(r, b, strict=True)]
            figures.append(
                Figure(
                    name=f"{what} round trip",
                    value=statistics.median(r),
                    unit="s",
                    baseline=statistics.median(b),
                    baseline_name="ipykernel",
                    paired_ratio=statistics.median(ratios),
                    note="build the frame in the sandbox and display it, cleaned; interleaved pairs "
                    "(the sandbox's cost of building the frame is in it too: see the in-process figures)",
                )
            )
    finally:
        rlm.shutdown()
        base.shutdown()
    return figures


def run(quick: bool = True) -> list[Figure]:
    return _in_process(quick) + _kernels(quick)
