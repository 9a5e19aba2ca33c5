"""Real files of every corpus format, written with each format's own library (fpdf2, python-docx, pyarrow,
nbformat, the stdlib's email/mailbox/zipfile/tarfile/gzip), and hostile ones (a zip bomb, deeply nested
HTML, a truncated PDF)."""

from __future__ import annotations

import gzip
import io
import json
import mailbox
import tarfile
import zipfile
from email.message import EmailMessage
from pathlib import Path

__all__ = ["make_corpus", "make_hostile", "make_pdf"]


def make_pdf(path: Path, pages: list[list[str]]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def _docx(path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly memo", level=1)
    document.add_paragraph("The river barge carried twelve crates of saffron.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "port", "crates"
    table.cell(1, 0).text, table.cell(1, 1).text = "Lisbon", "12"
    document.save(str(path))


def _epub(path: Path) -> None:
    chapter = "<html><head><title>Ch</title></head><body><h1>Chapter {n}</h1><p>{text}</p></body></html>"
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="c2" href="c2.xhtml" media-type="application/xhtml+xml"/></manifest>'
        '<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>'
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
        '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        zf.writestr("META-INF/container.xml", container)
        zf.writestr("OEBPS/content.opf", opf)
        zf.writestr("OEBPS/c1.xhtml", chapter.format(n=1, text="The lighthouse keeper counted gulls."))
        zf.writestr("OEBPS/c2.xhtml", chapter.format(n=2, text="A storm broke the northern pier."))


def _mbox(path: Path) -> None:
    box = mailbox.mbox(str(path))
    for i, (subject, body) in enumerate(
        [("Budget", "The budget for the orchard is 400 florins."), ("Harvest", "Pears ripen in week 38.")]
    ):
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = f"a{i}@example.org", "b@example.org", subject
        msg.set_content(body)
        box.add(msg)
    box.flush()
    box.close()


def _eml(path: Path) -> None:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "clerk@example.org", "mayor@example.org", "Bridge"
    msg.set_content("The bridge toll rises to three pennies.")
    msg.add_attachment(b"data", maintype="application", subtype="octet-stream", filename="toll.bin")
    path.write_bytes(bytes(msg))


def _ipynb(path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Glacier notes"),
        nbformat.v4.new_code_cell(
            "print(7 * 6)", outputs=[nbformat.v4.new_output("stream", name="stdout", text="42\n")]
        ),
    ]
    nbformat.write(nb, str(path))


def _parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"city": ["Oslo", "Quito", "Perth"], "rain_mm": [763, 1010, 733]})
    pq.write_table(table, str(path))


def make_corpus(root: Path) -> dict[str, str]:
    """Write one file of each format under `root`; returns {file name: a phrase its text must hold}."""
    root.mkdir(parents=True, exist_ok=True)
    make_pdf(
        root / "report.pdf",
        [
            ["Page one is about wheat prices."],
            ["The cobalt mine closed in 1921.", "Second line of page two."],
        ],
    )
    (root / "page.html").write_text(
        "<html><head><title>Harbour news</title><script>var secret=1;</script></head><body>"
        "<nav><a href='/'>Home</a><a href='/x'>Archive links</a></nav><main><h1>Harbour news</h1>"
        "<h2>Tides</h2><p>High tide reached 4.2 metres on Tuesday.</p></main>"
        "<footer>Copyright boilerplate</footer></body></html>"
    )
    _docx(root / "memo.docx")
    _epub(root / "book.epub")
    _ipynb(root / "notes.ipynb")
    _mbox(root / "inbox.mbox")
    _eml(root / "letter.eml")
    (root / "rain.csv").write_text("city,rain_mm\nOslo,763\nQuito,1010\n")
    (root / "rows.tsv").write_text("id\tname\n1\tanvil\n2\tbellows\n")
    (root / "items.json").write_text(json.dumps([{"item": "kettle", "n": 3}, {"item": "ladle", "n": 5}]))
    (root / "events.jsonl").write_text('{"event": "launch"}\n{"event": "eclipse at noon"}\n')
    _parquet(root / "rain.parquet")
    (root / "plain.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "log.txt.gz").write_bytes(gzip.compress(b"first gz line\nthe owl hooted twice\n"))
    with zipfile.ZipFile(root / "bundle.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("inner/a.txt", "zipped text about copper kettles\n")
        zf.writestr("inner/b.html", "<html><body><p>Zipped page on tin.</p></body></html>")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"tarred note on amber beads\n"
        info = tarfile.TarInfo("docs/c.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    (root / "pack.tar.gz").write_bytes(buf.getvalue())
    return {
        "report.pdf": "The cobalt mine closed in 1921.",
        "page.html": "High tide reached 4.2 metres on Tuesday.",
        "memo.docx": "The river barge carried twelve crates of saffron.",
        "book.epub": "A storm broke the northern pier.",
        "notes.ipynb": "print(7 * 6)",
        "inbox.mbox": "Pears ripen in week 38.",
        "letter.eml": "The bridge toll rises to three pennies.",
        "rain.csv": "Quito,1010",
        "rows.tsv": "bellows",
        "items.json": '{"item": "ladle", "n": 5}',
        "events.jsonl": "eclipse at noon",
        "rain.parquet": "Quito | 1010",
        "plain.txt": "gamma",
        "log.txt.gz!log.txt": "the owl hooted twice",
        "bundle.zip!inner/a.txt": "copper kettles",
        "bundle.zip!inner/b.html": "Zipped page on tin.",
        "pack.tar.gz!docs/c.txt": "amber beads",
    }


def make_hostile(root: Path, bomb_mb: int = 40) -> dict[str, str]:
    """Hostile files under `root` (bombs expanding to `bomb_mb` MB); returns {file name: a word its skip
    reason must hold}."""
    root.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(root / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros.txt", b"\0" * (bomb_mb * 1024 * 1024))
    (root / "bomb.txt.gz").write_bytes(gzip.compress(b"a" * (bomb_mb * 1024 * 1024), compresslevel=9))
    (root / "deep.html").write_text("<div>" * 100_000 + "x" + "</div>" * 100_000)
    make_pdf(root / "whole.pdf", [["a page of text"]] * 3)
    data = (root / "whole.pdf").read_bytes()
    (root / "truncated.pdf").write_bytes(data[: len(data) // 2])
    (root / "whole.pdf").unlink()
    (root / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (root / "bad.ipynb").write_text("{not json")
    return {
        "bomb.zip": "expands",
        "bomb.txt.gz": "expands",
        "deep.html": "HTML",
        "truncated.pdf": "PDF",
        "broken.docx": "DOCX",
        "bad.ipynb": "JSON",
    }
