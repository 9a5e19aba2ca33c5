"""Opening a zip (an archive, a DOCX, an EPUB) only after checking its declared member count and expanded
size against the caps: zipfile never yields more than a member's declared size."""

from __future__ import annotations

import io
import zipfile

from rlm_kernel.repl.documents.caps import Caps, FileSkipped

__all__ = ["open_zip", "read_member"]


def open_zip(data: bytes, caps: Caps, what: str) -> zipfile.ZipFile:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError, OSError) as err:
        raise FileSkipped(f"not a readable {what} ({err})") from None
    if len(infos) > caps.members:
        raise FileSkipped(f"{len(infos):,} members, over the {caps.members:,} cap (RLM_CORPUS_MAX_MEMBERS)")
    expanded = sum(i.file_size for i in infos)
    if expanded > caps.expanded_bytes:
        raise FileSkipped(
            f"expands to {expanded:,} bytes, over the {caps.expanded_mb:g} MB cap "
            "(RLM_CORPUS_MAX_EXPANDED_MB): "
            "a decompression bomb?"
        )
    return zf


def read_member(zf: zipfile.ZipFile, name: str, what: str) -> bytes:
    try:
        return zf.read(name)
    except KeyError:
        raise FileSkipped(f"{what}: no member {name!r}") from None
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, NotImplementedError) as err:
        raise FileSkipped(f"{what}: member {name!r} cannot be read ({err})") from None
