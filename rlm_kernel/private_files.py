"""Where the unconfined processes keep what the kernel may never read or write: the cache key, replay copies.

A per-user state folder (`$XDG_STATE_HOME/rlm-kernel/broker`, ~/.local/state by default, mode 0700). The OS
layer grants the kernel nothing there (it is carved out of a context root that holds it). The broker
authenticates every response it records with `cache_key_bytes()` (HMAC), so an entry the kernel rewrote is
refused. A replay of recordings that carry no tag of ours (committed with a notebook) is served from a copy
the supervisor makes at start, before the kernel runs any code (`snapshot_replay_cache`). It imports nothing
of ours: the launcher and the supervisor use it while the kernel starts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "DEFAULT_CACHE_DIR",
    "MAX_REPLAY_COPY",
    "REPLAY_SNAPSHOT_VAR",
    "cache_key_bytes",
    "cache_root",
    "default_cache_dir",
    "key_dir",
    "replay_snapshot",
    "snapshot_replay_cache",
]

DEFAULT_CACHE_DIR = "@per-user"
"""The `cache_dir` default: a per-user folder for the notebook's directory (`default_cache_dir`), outside
every context root, so the kernel can neither read nor write the responses."""

MAX_REPLAY_COPY = 1 << 30
"""Bytes of recordings the supervisor copies at start (the kernel can make a file in a root sparse and huge:
copied, it would fill the disk); a larger cache is not copied, and its untagged entries are not served."""

REPLAY_SNAPSHOT_VAR = "RLM_BROKER_REPLAY_SNAPSHOT"
"""Set in the supervisor's own environment (brokers inherit it, the kernel never sees it)."""
CACHE_FILE = "llm-cache.sqlite3"


def key_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The broker's private folder (not created here)."""
    env = os.environ if environ is None else environ
    base = Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state").expanduser()
    return (base / "rlm-kernel" / "broker").absolute()


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where the default response caches live: `$XDG_CACHE_HOME/rlm-kernel/responses` (~/.cache)."""
    env = os.environ if environ is None else environ
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return (base / "rlm-kernel" / "responses").absolute()


def default_cache_dir(notebook_dir: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The default response cache of notebooks in `notebook_dir`: one folder per notebook directory (named
    after it, with a hash of its path) under `cache_root`."""
    import hashlib

    folder = notebook_dir.resolve()
    digest = hashlib.sha256(str(folder).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in folder.name)[:40] or "root"
    return cache_root(environ) / f"{name}-{digest}"


def _private_dir() -> Path:
    folder = key_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    return folder


def cache_key_bytes() -> bytes:
    """The key the broker authenticates cache entries with: 32 random bytes made on first use (mode 0600)."""
    path = _private_dir() / "cache-key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
        path.unlink()  # a half-written key (a crash while it was made): make a new one
        return cache_key_bytes()
    key = os.urandom(32)
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key


def _start_cache_dir(env: Mapping[str, str]) -> Path | None:
    session = env.get("JPY_SESSION_NAME", "")  # as `llm.config.notebook_dir`
    base = Path(session).parent if session and os.path.isabs(session) else Path.cwd()
    base = base if base.is_dir() else Path.cwd()
    raw = env.get("RLM_CACHE_DIR", "").strip()
    if not raw or raw == DEFAULT_CACHE_DIR:
        return default_cache_dir(base, env)
    path = Path(raw).expanduser()
    return (path if path.is_absolute() else base / path).resolve()


def snapshot_replay_cache(environ: Mapping[str, str] | None = None) -> Path | None:
    """In the supervisor at start: when the notebook's author set `RLM_CACHE=replay` (with `RLM_CACHE_DIR`,
    or the default cache), copy that cache into the private folder, record where in
    `REPLAY_SNAPSHOT_VAR`, and return the copy's folder (the supervisor removes it when it exits). None when
    there is nothing to copy."""
    env = os.environ if environ is None else environ
    if env.get("RLM_CACHE", "").strip().lower() != "replay":
        return None
    source = _start_cache_dir(env)
    if source is None or not (source / CACHE_FILE).is_file():
        return None
    import shutil  # only for a replay: the supervisor starts beside the kernel
    import stat

    files = []
    for suffix in ("", "-wal"):
        try:
            info = os.lstat(source / (CACHE_FILE + suffix))
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):  # a link, a fifo, a device: nothing the broker copies or reads
            return None
        files.append((CACHE_FILE + suffix, info.st_size))
    if sum(size for _name, size in files) > MAX_REPLAY_COPY:
        return None
    copy: Path | None = None
    try:
        replays = _private_dir() / "replays"
        for old in replays.iterdir() if replays.is_dir() else ():  # left by supervisors that were killed
            if old.name.isdigit() and not Path(f"/proc/{old.name}").exists():
                shutil.rmtree(old, ignore_errors=True)
        copy = replays / str(os.getpid())
        copy.mkdir(parents=True, exist_ok=True, mode=0o700)
        for name, size in files:
            # no link, no fifo (O_NONBLOCK: an open never waits), and never more than the size seen above:
            # the kernel may rewrite or grow the file while it is copied
            fd = os.open(source / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as src, open(copy / name, "wb") as dst:
                left = size
                while left > 0 and (chunk := src.read(min(left, 1 << 20))):
                    dst.write(chunk)
                    left -= len(chunk)
    except OSError:
        if copy is not None:
            shutil.rmtree(copy, ignore_errors=True)
        return None
    os.environ[REPLAY_SNAPSHOT_VAR] = json.dumps({"source": str(source), "copy": str(copy)})
    return copy


def replay_snapshot(source: str) -> Path | None:
    """In a broker: the start-time copy of the replay cache in `source`, if the supervisor made one."""
    try:
        snap = json.loads(os.environ.get(REPLAY_SNAPSHOT_VAR) or "null")
    except ValueError:
        return None
    if not isinstance(snap, dict) or snap.get("source") != str(source):
        return None
    return Path(snap["copy"])
