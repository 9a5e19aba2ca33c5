"""Tables and plots: pandas and numpy cells in the rlm kernel against stock ipykernel; a figure's render time.

The same cells run alternately in both kernels through jupyter_client (medians of client-side round trips);
the data is built outside the timing, identically in both. Needs the `[data]` extra.
"""

from __future__ import annotations

from benchmarks.bench_sandbox import _alternate, _ratio_figure, _timed
from benchmarks.common import Figure
from tests.kernel_client import KernelHarness

__all__ = ["CELLS", "SETUP", "run"]

SETUP = (
    "import numpy as np\n"
    "import pandas as pd\n"
    "import matplotlib.pyplot as plt\n"
    "rng = np.random.default_rng(7)\n"
    "services = np.array([f'svc-{{i:02d}}' for i in range(50)])\n"
    "df = pd.DataFrame({{\n"
    "    'service': services[rng.integers(0, 50, {rows})],\n"
    "    'status': rng.choice([200, 200, 200, 404, 500], {rows}),\n"
    "    'latency': rng.exponential(0.2, {rows}),\n"
    "}})\n"
    "a = rng.random({items})\n"
    "len(df)"
)

CELLS: dict[str, tuple[str, str, float | None]] = {
    # name: (code, what it measures, target ratio)
    "pandas groupby/value_counts": (
        "g = df.groupby('service').agg(n=('latency', 'count'), mean=('latency', 'mean'), "
        "worst=('latency', 'max'))\n"
        "errors = df[df['status'] >= 500].groupby('service')['status'].count()\n"
        "codes = df['status'].value_counts()\n"
        "top = df['service'].value_counts().head(5)\n"
        "(len(g), int(errors.sum()), int(codes.sum()), len(top))",
        "groupby + named agg, a mask + groupby, two value_counts over {rows:,} rows",
        1.2,
    ),
    "numpy reductions": (
        "(float(a.sum()), float(a.mean()), float(a.std()), float(np.percentile(a, 99)), "
        "int((a > 0.5).sum()), float(a @ a), np.sort(a[:1_000_000])[-1].item())",
        "sum, mean, std, percentile, a mask count, a dot product over {items:,} floats; a 1M sort",
        1.2,
    ),
    "figure render": (
        "fig, axes = plt.subplots(1, 2, figsize=(10, 4))\n"
        "g['mean'].plot.bar(ax=axes[0], title='mean latency')\n"
        "axes[1].hist(df['latency'].to_numpy()[:100_000], bins=50)\n"
        "axes[1].set_title('latency')\n"
        "plt.show()",
        "a two-panel figure (bar + 50-bin histogram) drawn and sent inline as PNG",
        None,
    ),
}


def _render_cpu(rlm: KernelHarness, code: str, reps: int) -> Figure:
    """CPU seconds the kernel spends on the figure cell (drawing and PNG encoding included), measured inside
    the kernel: on a shared machine the wall time mostly measures waiting for a core."""
    import statistics

    timed = f"import time\nt0 = time.process_time()\n{code}\nprint(time.process_time() - t0)"
    seconds = []
    for _ in range(reps):
        ex = rlm.execute(timed, timeout=300)
        if not ex.ok:
            raise RuntimeError(f"figure cell failed: {ex}")
        seconds.append(float(ex.stdout.strip().splitlines()[-1]))
    value = statistics.median(seconds)
    return Figure(
        name="figure render CPU, absolute",
        value=value,
        unit="s",
        target="< 1 s",
        met=value < 1.0,
        note="process CPU time of the figure cell in the rlm kernel (draw + PNG + display)",
    )


def run(quick: bool = True) -> list[Figure]:
    """Each cell alternately in both kernels; one ratio figure per cell, plus the figure's absolute time."""
    reps = 5 if quick else 15
    rows, items = (1_000_000, 10_000_000) if quick else (5_000_000, 50_000_000)
    figures: list[Figure] = []
    rlm = KernelHarness("rlm")
    base = KernelHarness("python3")
    try:
        for harness in (rlm, base):
            _timed(harness, SETUP.format(rows=rows, items=items), timeout=600)
        for name, (code, note, target) in CELLS.items():
            _timed(rlm, code)  # warm-up: first-call costs are not the steady state
            _timed(base, code)
            r, b = _alternate(lambda c=code: _timed(rlm, c), lambda c=code: _timed(base, c), reps)
            figures.append(_ratio_figure(f"{name} cell", r, b, target, note.format(rows=rows, items=items)))
        figures.append(_render_cpu(rlm, CELLS["figure render"][0], reps))
    finally:
        rlm.shutdown()
        base.shutdown()
    return figures
