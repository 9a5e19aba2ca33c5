"""Writes mixed/, the mixed-format corpus of tutorial 8, from public-domain texts (run:
`python notebooks/data/make_mixed.py`; needs fpdf2, python-docx and pyarrow, i.e. `pip install -e '.[test]'`)."""

import mailbox
from email.message import EmailMessage
from pathlib import Path

import docx
import pyarrow as pa
import pyarrow.parquet as pq
from fpdf import FPDF

HERE = Path(__file__).resolve().parent / "mixed"

# Abraham Lincoln, the Gettysburg Address (1863; the Bliss copy) - public domain
GETTYSBURG = [
    ["Address delivered at the dedication of the Cemetery at Gettysburg.", "Abraham Lincoln, November 19, 1863.", ""],
    [
        "Four score and seven years ago our fathers brought forth on this continent, a new nation,",
        "conceived in Liberty, and dedicated to the proposition that all men are created equal.",
        "Now we are engaged in a great civil war, testing whether that nation, or any nation so",
        "conceived and so dedicated, can long endure. We are met on a great battle-field of that war.",
    ],
    [
        "It is rather for us to be here dedicated to the great task remaining before us -- that",
        "government of the people, by the people, for the people, shall not perish from the earth.",
    ],
]

# The Declaration of Independence (1776), its opening - public domain
DECLARATION = """<!DOCTYPE html><html><head><title>The Declaration of Independence</title>
<script>trackVisitor();</script></head><body>
<nav><a href="/">Home</a> | <a href="/archive">Archive</a> | <a href="/donate">Donate</a></nav>
<main><h1>The Declaration of Independence</h1><h2>In Congress, July 4, 1776</h2>
<p>When in the Course of human events, it becomes necessary for one people to dissolve the political bands
which have connected them with another, and to assume among the powers of the earth, the separate and equal
station to which the Laws of Nature and of Nature's God entitle them, a decent respect to the opinions of
mankind requires that they should declare the causes which impel them to the separation.</p>
<p>We hold these truths to be self-evident, that all men are created equal, that they are endowed by their
Creator with certain unalienable Rights, that among these are Life, Liberty and the pursuit of Happiness.</p>
</main><footer>Copyright notice of the site (not of the text)</footer></body></html>
"""


def main() -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for lines in GETTYSBURG:
        pdf.add_page()
        for line in lines:
            pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(HERE / "gettysburg.pdf"))
    (HERE / "declaration.html").write_text(DECLARATION)
    memo = docx.Document()
    memo.add_heading("Reading list for the seminar", level=1)
    memo.add_paragraph("Read the Gettysburg Address (gettysburg.pdf) and the Declaration (declaration.html).")
    table = memo.add_table(rows=3, cols=2)
    for row, (text, year) in enumerate([("document", "year"), ("Declaration of Independence", "1776"),
                                        ("Gettysburg Address", "1863")]):
        table.cell(row, 0).text, table.cell(row, 1).text = text, year
    memo.save(str(HERE / "seminar.docx"))
    box_path = HERE / "seminar.mbox"
    box_path.unlink(missing_ok=True)
    box = mailbox.mbox(str(box_path))
    for sender, subject, body in [
        ("ada@example.org", "Seminar time", "The seminar moves to Thursday at 10, room 4."),
        ("ben@example.org", "Re: Seminar time", "Thursday works. I will bring copies of the address."),
    ]:
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = sender, "seminar@example.org", subject
        msg.set_content(body)
        box.add(msg)
    box.flush()
    box.close()
    pq.write_table(
        pa.table({"speech": ["Gettysburg Address", "Second Inaugural"], "year": [1863, 1865], "words": [272, 701]}),
        str(HERE / "speeches.parquet"),
    )


if __name__ == "__main__":
    main()
