"""The LLM settings file as the kernel may hold it: its settings read at start, with the key as a reference.

The file may hold an `api_key`. With an LLM broker the kernel must never read it: the launcher reads it
before it becomes the kernel (`snapshot_for_kernel`), puts the settings in the kernel's environment with the
key replaced by a reference, and the OS layer gives the kernel no access to the file. `llm.config` reads the
snapshot (`snapshot_at_start`) in place of the file. It imports nothing of ours: the launcher uses it before
the kernel starts.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["AT_START_VAR", "FILE_KEY_REF", "config_path", "snapshot_at_start", "snapshot_for_kernel"]

AT_START_VAR = "RLM_CONFIG_AT_START"
FILE_KEY_REF = "broker-key-ref:config file"
"""What the kernel holds in place of the settings file's key (`handover.key_ref("config file")`)."""


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The TOML file: `$RLM_CONFIG`, else `$XDG_CONFIG_HOME/rlm-kernel/config.toml` (~/.config by default)."""
    env = os.environ if environ is None else environ
    if env.get("RLM_CONFIG"):
        return Path(env["RLM_CONFIG"]).expanduser()
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config").expanduser()
    return base / "rlm-kernel" / "config.toml"


def snapshot_for_kernel(environ: Mapping[str, str]) -> str:
    """The settings file of `environ` as the kernel may hold it (JSON for `AT_START_VAR`): its path, and its
    tables (the key replaced by a reference) or why it could not be read, or that there is none."""
    path = config_path(environ)
    out: dict[str, Any] = {"path": str(path)}
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            out["error"] = str(exc)
        else:
            if "api_key" in data:
                data["api_key"] = FILE_KEY_REF
            out["data"] = data
    return json.dumps(out, default=str)


def snapshot_at_start(path: Path, environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The launcher's snapshot of the settings file at `path` ({"data": ...}, {"error": ...} or {} when
    there was no file), or None when there is none for that path (then the file is read as it is)."""
    env = os.environ if environ is None else environ
    raw = env.get(AT_START_VAR)
    if not raw:
        return None
    try:
        snap = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(snap, dict) or snap.get("path") != str(path):
        return None
    return snap
