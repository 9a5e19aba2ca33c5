"""Partitioning text into chunks held as (start, end) character offsets, never copies.

`split_even` cuts into n roughly equal parts at line (else whitespace) boundaries; `line_windows` makes
fixed-size line windows with overlap (find_relevant's ~50-line chunks with 5-line overlap).
"""

from __future__ import annotations

import re

import numpy as np

from rlm_kernel.analysis.newlines import newline_starts

__all__ = ["MAX_LINE", "line_starts", "line_windows", "newline_starts", "split_even"]

MAX_LINE = 400
"""Lines longer than this count as several lines when windowing (minified code, one-line JSON)."""
_NEWLINE = re.compile(r"\r\n|\r|\n")
_SPACE = re.compile(r"\s")
_BLOCK = 1 << 24  # characters encoded at a time by the ASCII fast path (bounds its extra memory)


def line_starts(content: str, max_line: int | None = None) -> list[int]:
    """Offsets where each line begins (`\\n`, `\\r\\n`, lone `\\r` end lines); starts with 0.

    With `max_line`, a longer line (minified code, one-line JSON) counts as several lines, broken after
    whitespace near every `max_line` characters (mid-text where there is none).
    """
    if "\r" not in content and content.isascii():
        starts = _ascii_line_starts(content)
    elif "\r" not in content:
        starts = _unicode_line_starts(content)
    else:
        starts = [0] + [m.end() for m in _NEWLINE.finditer(content)]
    if len(starts) > 1 and starts[-1] == len(content):
        starts.pop()  # a trailing newline does not open another line
    if max_line is not None:
        starts = _break_long_lines(content, starts, max_line)
    return starts


def _ascii_line_starts(content: str) -> list[int]:
    """`[0]` and the offset after every `\n`, found by numpy over 16 MiB blocks (ASCII: bytes = chars)."""
    parts = [np.zeros(1, dtype=np.int64)]
    for block in range(0, len(content), _BLOCK):
        codes = np.frombuffer(content[block : block + _BLOCK].encode("ascii"), dtype=np.uint8)
        parts.append(np.flatnonzero(codes == 10) + (block + 1))
    return np.concatenate(parts).tolist()


def _unicode_line_starts(content: str) -> list[int]:
    """As `_ascii_line_starts` for any text: blocks encoded as UTF-32 (4 bytes a character, so an index into
    the code units is a character offset); lone surrogates pass through."""
    parts = [np.zeros(1, dtype=np.int64)]
    block_chars = _BLOCK // 4
    for block in range(0, len(content), block_chars):
        raw = content[block : block + block_chars].encode("utf-32-le", "surrogatepass")
        parts.append(np.flatnonzero(np.frombuffer(raw, dtype=np.uint32) == 10) + (block + 1))
    return np.concatenate(parts).tolist()


def _break_long_lines(content: str, starts: list[int], max_line: int) -> list[int]:
    lengths = np.diff(np.asarray(starts, dtype=np.int64), append=len(content))
    long_lines = np.flatnonzero(lengths > max_line).tolist()
    if not long_lines:
        return starts
    out: list[int] = []
    done = 0
    for i in long_lines:
        out += starts[done:i]  # the short lines before this long one, as they are
        done = i + 1
        a, b = starts[i], starts[i + 1] if i + 1 < len(starts) else len(content)
        out.append(a)
        while b - a > max_line:
            cut = -1
            for m in _SPACE.finditer(content, a + max_line // 2, a + max_line):
                cut = m.end()
            a = cut if a < cut < b else a + max_line
            if a < b:
                out.append(a)
    out += starts[done:]
    return out


def line_windows(
    content: str, lines_per_chunk: int = 50, overlap: int = 5, max_line: int | None = MAX_LINE
) -> list[tuple[int, int]]:
    """Windows of `lines_per_chunk` lines, each starting `lines_per_chunk - overlap` lines after the last.

    Returns (start, end) offsets; the last window may be shorter. Empty content gives no windows. Lines
    longer than `max_line` characters count as several (so one-line files still give bounded chunks).
    """
    if not content:
        return []
    if lines_per_chunk < 1 or not 0 <= overlap < lines_per_chunk:
        raise ValueError(
            f"line_windows needs lines_per_chunk >= 1 and 0 <= overlap < lines_per_chunk, "
            f"got {lines_per_chunk} and {overlap}"
        )
    starts = line_starts(content, max_line)
    n_lines = len(starts)
    step = lines_per_chunk - overlap
    windows = []
    first = 0
    while True:
        last = first + lines_per_chunk
        end = starts[last] if last < n_lines else len(content)
        windows.append((starts[first], end))
        if last >= n_lines:
            break
        first += step
    return windows


def _cut_near(content: str, target: int, lo: int, hi: int) -> int:
    """A cut offset in (lo, hi) closest to `target`: after a newline, else after whitespace; -1 if none."""
    before = content.rfind("\n", lo, target)
    after = content.find("\n", target, hi)
    options = [p + 1 for p in (before, after) if p != -1 and lo < p + 1 < hi]
    if not options:
        m_before = None
        for m_before in _SPACE.finditer(content, max(lo, target - 4096), target):  # noqa: B007 - keep last
            pass
        m_after = _SPACE.search(content, target, min(hi, target + 4096))
        options = [m.end() for m in (m_before, m_after) if m is not None and lo < m.end() < hi]
    return min(options, key=lambda p: abs(p - target)) if options else -1


def split_even(content: str, n: int, max_part: int | None = None) -> list[tuple[int, int]]:
    """Cut `content` into at most `n` contiguous, non-empty, roughly equal parts that together cover it.

    Cuts fall just after a newline when one is within half a part of the ideal place, else just after
    whitespace; where neither is near, that cut is skipped (the part grows) so words are never split — unless
    the part would then exceed `max_part` characters, when it is cut mid-text. Returns (start, end) offsets.
    """
    if n < 1:
        raise ValueError(f"the number of chunks must be at least 1, got {n}")
    if not content:
        return []
    n = min(n, len(content))
    size = len(content) / n
    cuts = [0]
    for i in range(1, n):
        target = round(i * size)
        if target <= cuts[-1]:
            continue
        lo = max(cuts[-1], round(target - size / 2))
        hi = min(len(content), round(target + size / 2) + 1)
        cut = _cut_near(content, target, lo, hi)
        if cut == -1:
            next_target = round((i + 1) * size) if i + 1 < n else len(content)
            if max_part is None or next_target - cuts[-1] <= max_part:
                continue  # skipping this cut keeps the part within max_part
            cut = target
        if cuts[-1] < cut < len(content):
            cuts.append(cut)
    while max_part is not None and len(content) - cuts[-1] > max_part:
        cuts.append(cuts[-1] + max_part)  # only a whitespace-free tail can get here
    cuts.append(len(content))
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
