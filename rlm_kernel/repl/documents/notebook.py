"""Jupyter notebooks (.ipynb): each cell as a `--- cell N (type) ---` section, its outputs as text."""

from __future__ import annotations

import json

from rlm_kernel.repl.documents.caps import FileSkipped
from rlm_kernel.repl.documents.extracted import Extracted, TextBuilder

__all__ = ["extract_ipynb"]


def _text(value: object) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _outputs(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs") or ():
        if not isinstance(out, dict):
            continue
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(_text(out.get("text")))
        elif kind in ("execute_result", "display_data"):
            parts.append(_text((out.get("data") or {}).get("text/plain")))
        elif kind == "error":
            parts.append(f"{out.get('ename', '')}: {out.get('evalue', '')}")
    text = "\n".join(p.rstrip("\n") for p in parts if p)
    return f"[output]\n{text}\n" if text else ""


def extract_ipynb(data: bytes) -> Extracted:
    try:
        nb = json.loads(data)
    except (ValueError, RecursionError) as err:
        raise FileSkipped(f"not a readable notebook (JSON: {err})") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise FileSkipped("not a notebook: no 'cells' list (nbformat 4 is read)")
    out = TextBuilder("cell", "ipynb")
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            continue
        out.start(number, f"({cell.get('cell_type', '?')})")
        source = _text(cell.get("source"))
        out.add(source.rstrip("\n") + "\n" if source else "")
        out.add(_outputs(cell))
    return out.done()
