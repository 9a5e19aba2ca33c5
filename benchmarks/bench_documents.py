"""Document parsing throughput for the corpora formats (issue 28): PDF pages/s per core through the kernel's
PDF reader (pypdf), against pdfminer.six on the same file when it is installed (the library we did not
choose), and HTML pages/s through the lxml reader. Target: ≥ 20 PDF pages/s per core on ordinary text PDFs.

Run: `python -m benchmarks.bench_documents` (CPU time of this process, so other jobs on the machine weigh
little; needs fpdf2 from the [test] extra to write the PDF).
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from rlm_kernel.repl.documents.caps import Caps
from rlm_kernel.repl.documents.html_text import extract_html
from rlm_kernel.repl.documents.pdf import extract_pdf

WORDS = "the quick brown fox jumps over lazy dog report analysis corpus page line section figure".split()


def _pdf(path: Path, pages: int = 60) -> None:
    from fpdf import FPDF

    rng = random.Random(1)
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for _ in range(pages):
        pdf.add_page()
        for _ in range(45):
            pdf.cell(0, 5, " ".join(rng.choice(WORDS) for _ in range(14)), new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def _html() -> bytes:
    rng = random.Random(2)
    nav = "<nav>" + "".join(f"<a href='/{i}'>Link {i}</a>" for i in range(40)) + "</nav>"
    body = "".join(
        f"<h2>Section {i}</h2>"
        + "".join(f"<p>{' '.join(rng.choice(WORDS) for _ in range(60))}</p>" for _ in range(5))
        for i in range(20)
    )
    page = (
        f"<html><head><title>T</title></head><body>{nav}<main>{body}</main><footer>f</footer></body></html>"
    )
    return page.encode()


def _per_second(fn, units: int, repeats: int = 3) -> float:
    fn()  # warm-up: the library's import and first use
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return units / max(best, 1e-9)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.pdf"
        _pdf(path)
        data = path.read_bytes()
        pypdf_rate = _per_second(lambda: extract_pdf(data, Caps()), 60)
        print(f"PDF, pypdf (used): {pypdf_rate:,.0f} pages/s per core (target >= 20)")
        try:
            from pdfminer.high_level import extract_text
        except ImportError:
            print("PDF, pdfminer.six: not installed (pip install pdfminer.six to compare)")
        else:
            miner_rate = _per_second(lambda: extract_text(str(path)), 60, repeats=1)
            print(
                f"PDF, pdfminer.six: {miner_rate:,.0f} pages/s per core; "
                f"pypdf is {pypdf_rate / miner_rate:.1f}x as fast"
            )
    page = _html()
    print(
        f"HTML, lxml main text: {_per_second(lambda: extract_html(page), 1):,.0f} pages/s per core "
        f"({len(page) // 1024} KB page)"
    )


if __name__ == "__main__":
    main()
