"""Bracket pairs of masked source: (), [] and {} matched per kind with numpy, in linear time.

Also answers "which bracket encloses this offset" by binary search; used by the regex engines.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Brackets", "max_nesting"]


class _PairMap:
    """A read-only int -> int mapping over two numpy arrays (keys sorted): `get`, `in`, `[]` like a dict."""

    def __init__(self, keys: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")
        self._keys = keys[order]
        self._values = values[order]

    def get(self, key: int, default: int | None = None) -> int | None:
        i = int(np.searchsorted(self._keys, key))
        if i < len(self._keys) and self._keys[i] == key:
            return int(self._values[i])
        return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self.get(key) is not None

    def __getitem__(self, key: int) -> int:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value


class Brackets:
    """Every (), [] and {} pair of a masked text, matched per kind with numpy (a stack per kind, vectorised).

    A closer with no opener is ignored; an opener never closed has no entry in `close_of`.
    """

    def __init__(self, masked: str) -> None:
        codes = _codes(masked)
        hit = np.zeros(len(codes), dtype=bool)
        for c in "()[]{}":
            hit |= codes == ord(c)
        pos_all = np.flatnonzero(hit)
        ch = codes[pos_all]
        opens_l, closes_l = [], []
        for o, c in ("()", "[]", "{}"):
            sel = (ch == ord(o)) | (ch == ord(c))
            pos = pos_all[sel]
            if len(pos) < 2:
                continue
            val = np.where(ch[sel] == ord(o), 1, -1)
            level, valid = _levels(val)
            pos, val, level = pos[valid], val[valid], level[valid]
            order = np.argsort(level, kind="stable")  # by level, then position (already sorted)
            p, v, lv = pos[order], val[order], level[order]
            pair = (v[:-1] == 1) & (v[1:] == -1) & (lv[:-1] == lv[1:])
            opens_l.append(p[:-1][pair])
            closes_l.append(p[1:][pair])
        empty = np.empty(0, dtype=np.int64)
        opens = np.concatenate(opens_l) if opens_l else empty
        closes = np.concatenate(closes_l) if closes_l else empty
        self.close_of = _PairMap(opens, closes)
        self.open_of = _PairMap(closes, opens)
        # for `enclosing`: every opener with its combined nesting level (all kinds together)
        val = np.where(np.isin(ch, [ord("("), ord("["), ord("{")]), 1, -1)
        level, _ = _levels(val)
        is_open = val == 1
        self._event_pos = pos_all
        self._event_depth_after = np.where(is_open, level, np.maximum(level - 1, 0))
        o_order = np.argsort(level[is_open], kind="stable")
        self._open_level = level[is_open][o_order]
        self._open_pos = pos_all[is_open][o_order]

    def enclosing(self, pos: int) -> int:
        """Offset of the innermost bracket ((, [ or {) open around `pos`, or -1."""
        i = int(np.searchsorted(self._event_pos, pos)) - 1
        if i < 0:
            return -1
        depth = int(self._event_depth_after[i])
        if depth <= 0:
            return -1
        lo = int(np.searchsorted(self._open_level, depth, "left"))
        hi = int(np.searchsorted(self._open_level, depth, "right"))
        k = int(np.searchsorted(self._open_pos[lo:hi], pos)) - 1
        return int(self._open_pos[lo + k]) if k >= 0 else -1


def max_nesting(text: str) -> int:
    """The deepest nesting of (, [ and { together in `text` (unmatched closers ignored), in linear time.

    Brackets inside strings and comments count too, so this is an upper bound for the code's real nesting.
    """
    codes = _codes(text)
    val = np.zeros(len(codes), dtype=np.int8)
    for c in "([{":
        val[codes == ord(c)] = 1
    for c in ")]}":
        val[codes == ord(c)] = -1
    val = val[val != 0].astype(np.int64)
    if not len(val):
        return 0
    c = np.cumsum(val)
    return int((c - np.minimum(np.minimum.accumulate(c), 0)).max())


def _codes(text: str) -> np.ndarray:
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _levels(val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per event of a +1/-1 walk floored at 0: (level, valid). An opener's level is the depth after it, a
    closer's the depth before it; a closer met at depth 0 is not valid (ignored, like a stack would)."""
    c = np.cumsum(val)
    floor = np.minimum(np.minimum.accumulate(c), 0)
    depth = c - floor  # depth after each event
    before = np.concatenate(([0], depth[:-1]))
    valid = (val == 1) | (before > 0)
    level = np.where(val == 1, depth, before)
    return level, valid
