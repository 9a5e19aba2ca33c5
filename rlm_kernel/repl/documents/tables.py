"""Tables: CSV/TSV and JSONL as they are, a JSON list and Parquet (pyarrow, read a row group at a time) as one
record per line after a header line naming the columns; record N is line N + 1 of its file."""

from __future__ import annotations

import io
import json

from rlm_kernel.repl.documents.caps import Caps, FileSkipped
from rlm_kernel.repl.documents.extracted import Extracted
from rlm_kernel.repl.documents.libs import need

__all__ = ["extract_delimited", "extract_json", "extract_jsonl", "extract_parquet"]


def _cell(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return " ".join(text.split()) if "\n" in text or "\r" in text else text


class _Lines:
    def __init__(self, caps: Caps) -> None:
        self.caps, self.parts, self.size = caps, [], 0

    def add(self, line: str) -> None:
        self.size += len(line) + 1
        if self.size > self.caps.expanded_bytes:
            raise FileSkipped(f"over {self.caps.expanded_mb:g} MB of text (RLM_CORPUS_MAX_EXPANDED_MB)")
        self.parts.append(line)

    def done(self, fmt: str, header: int = 1) -> Extracted:
        return Extracted("\n".join(self.parts) + "\n", "record", (), header, fmt)


def extract_delimited(text: str, fmt: str) -> Extracted:
    """CSV/TSV as is: already a header line and one record per line (a quoted field holding a line break
    spans lines: its record's number is that of the line it starts on, counted without such breaks)."""
    return Extracted(text if text.endswith("\n") else text + "\n", "record", (), 1, fmt)


def extract_json(data: bytes, caps: Caps) -> Extracted:
    """A JSON list: `[N records]` then one compact JSON value per line; other JSON: indented."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as err:
        raise FileSkipped(f"not readable JSON ({type(err).__name__}: {err})") from None
    if not isinstance(value, list):
        text = data.decode("utf-8-sig", errors="replace")
        return Extracted(text if text.endswith("\n") else text + "\n", format="json")
    out = _Lines(caps)
    out.add(f"[{len(value)} records]")
    for item in value:
        out.add(json.dumps(item, ensure_ascii=False))
    return out.done("json")


def extract_jsonl(text: str) -> Extracted:
    """JSONL as is, one record per line (blank lines kept so that line numbers stay the file's)."""
    return Extracted(text if text.endswith("\n") else text + "\n", "record", (), 0, "jsonl")


def extract_parquet(data: bytes, caps: Caps) -> Extracted:
    """Parquet: the column names, then each row's values joined by ` | `, a row group at a time."""
    pq = need("pyarrow.parquet", "Parquet")
    try:
        table = pq.ParquetFile(io.BytesIO(data))
        names = table.schema_arrow.names
    except Exception as err:  # noqa: BLE001 - any parser failure is a reason to skip the file
        raise FileSkipped(f"not a readable Parquet file ({type(err).__name__}: {err})") from None
    rows = table.metadata.num_rows
    if rows * max(len(names), 1) > caps.expanded_bytes:
        raise FileSkipped(f"{rows:,} rows × {len(names)} columns, over the expanded-size cap")
    out = _Lines(caps)
    out.add(" | ".join(names))
    for batch in table.iter_batches(batch_size=4096):
        for row in batch.to_pylist():
            out.add(" | ".join(_cell(row.get(n)) for n in names))
    return out.done("parquet")
