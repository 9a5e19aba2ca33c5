"""Archives: `.gz`, `.zip` and `.tar` (any compression tarfile reads) as their members, each named
`archive!member` and read as a file of its own kind, within the member-count and expanded-size caps."""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib

from rlm_kernel.repl.documents.caps import Caps, FileSkipped
from rlm_kernel.repl.documents.extracted import Member
from rlm_kernel.repl.documents.ziputil import open_zip, read_member

__all__ = ["members"]


def _gunzip(data: bytes, caps: Caps) -> bytes:
    limit = caps.expanded_bytes
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(limit + 1)
    except (OSError, EOFError, zlib.error) as err:
        raise FileSkipped(f"not a readable gzip file ({err})") from None
    if len(out) > limit:
        raise FileSkipped(
            f"expands to over {caps.expanded_mb:g} MB (RLM_CORPUS_MAX_EXPANDED_MB): a decompression bomb?"
        )
    return out


def _tar(name: str, data: bytes, caps: Caps) -> list[Member]:
    found: list[Member] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
            for count, info in enumerate(tf, start=1):
                if count > caps.members:
                    raise FileSkipped(f"over {caps.members:,} members (RLM_CORPUS_MAX_MEMBERS)")
                if not info.isfile():
                    continue  # links, devices and directories are not files of the corpus
                total += info.size
                if total > caps.expanded_bytes:
                    raise FileSkipped(
                        f"members expand to over {caps.expanded_mb:g} MB (RLM_CORPUS_MAX_EXPANDED_MB)"
                    )
                f = tf.extractfile(info)
                if f is not None:
                    found.append(Member(f"{name}!{info.name}", f.read(info.size)))
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise FileSkipped(f"not a readable tar archive ({err})") from None
    return found


def members(name: str, data: bytes, fmt: str, caps: Caps) -> list[Member]:
    """The regular-file members of archive `name` (format `fmt`: gz, zip or tar), in archive order."""
    if fmt == "gz":
        base = name.rsplit("/", 1)[-1]
        inner = f"{name}!{base[:-3] if base.lower().endswith('.gz') else base + '.content'}"
        return [Member(inner, _gunzip(data, caps))]
    if fmt == "tar":
        return _tar(name, data, caps)
    zf = open_zip(data, caps, "zip archive")
    return [
        Member(f"{name}!{info.filename}", read_member(zf, info.filename, "zip archive"))
        for info in zf.infolist()
        if not info.is_dir()
    ]
