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

    from rlm_kernel.output.sanitise import clean_html

    rows = 2_000 if quick else 10_000
    reps = 3 if quick else 7
    html = _table_html(rows)
    megabytes = len(html) / 1e6
    frame = pd.DataFrame({f"c{j}": [f"v{i}<{j}>" for i in range(rows)] for j in range(8)})
    render = _best(frame.to_html, reps)
    nh3_time = _best(lambda: clean_html(html), reps)
    figures = [
        Figure(
            name=f"sanitise a {megabytes:.1f} MB HTML table (nh3) vs pandas rendering it",
            value=nh3_time,
            unit="s",
            baseline=render,
            baseline_name="DataFrame.to_html",
            target="<= 0.5x",
            met=nh3_time / render <= 0.5,
            note=f"{rows:,} rows x 8 columns; {nh3_time / megabytes * 1e3:.1f} ms per MB",
        )
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
            code = TABLE_CELL.format(rows=rows) + ("" if rows <= 60 else "\n# max_rows applies")
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
                    target="<= 1.3x",
                    met=statistics.median(ratios) <= 1.3,
                    paired_ratio=statistics.median(ratios),
                    note="build the frame and display it (HTML cleaned by the rlm kernel); interleaved pairs",
                )
            )
    finally:
        rlm.shutdown()
        base.shutdown()
    return figures


def run(quick: bool = True) -> list[Figure]:
    return _in_process(quick) + _kernels(quick)
