"""Process helpers for broker tests: a kernel's broker pids and a scan of a process's memory."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["broker_pids", "children", "memory_contains"]


def children(pid: int) -> list[int]:
    """Pids whose parent is `pid` (read from /proc/*/stat)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def broker_pids(kernel_pid: int) -> list[int]:
    """The live brokers of a kernel: children of its supervisor (the kernel's child)."""
    return [b for sup in children(kernel_pid) for b in children(sup)]


_MAPS = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+)")


def memory_contains(pid: int, needle: bytes) -> bool:
    """Whether any readable mapping of process `pid` holds `needle` (reads /proc/<pid>/mem via maps)."""
    found = False
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            m = _MAPS.match(line)
            if m is None or not m.group(3).startswith("r"):
                continue
            start, end = int(m.group(1), 16), int(m.group(2), 16)
            if "[vvar]" in line or "[vsyscall]" in line:
                continue
            tail = b""
            pos = start
            while pos < end:
                size = min(16 * 1024 * 1024, end - pos)
                try:
                    mem.seek(pos)
                    chunk = mem.read(size)
                except (OSError, ValueError, OverflowError):
                    break
                if not chunk:
                    break
                if needle in tail + chunk:
                    return True
                tail = chunk[-len(needle) :]
                pos += len(chunk)
    return found
