"""Every `\\w+` word of a text as (start, end, hash) arrays, found by numpy instead of one str per word.

`word_spans(content)` gives the same spans as `re.finditer(r"\\w+", content)` (a word character is `_` or one
for which `str.isalnum()` holds, as in `re`) and a 64-bit hash per word that is equal for equal words. The
hash is a polynomial over per-character random values with a random multiplier, both drawn once per process,
so a text cannot be written to make two short words collide; words longer than `EXACT_HASH_ABOVE` characters
(where generic collisions of polynomial hashes mod 2**64 exist) are hashed by Python's keyed `hash` instead.
The text is read in blocks of `BLOCK` characters, cut between words, so the extra memory is bounded.
"""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np

__all__ = ["BLOCK", "EXACT_HASH_ABOVE", "word_spans"]

BLOCK = 1 << 20
EXACT_HASH_ABOVE = 32
_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


@lru_cache(maxsize=1)
def _keys() -> tuple[np.ndarray, np.ndarray, np.uint64]:
    """(powers of the multiplier for 0..BLOCK, random values of the 128 ASCII characters, the salt)."""
    seed = np.random.default_rng(int.from_bytes(os.urandom(16), "little"))
    multiplier = np.uint64(int(seed.integers(1 << 62, dtype=np.uint64)) * 2 + 1)  # odd: invertible mod 2**64
    powers = np.full(BLOCK + 1, multiplier, dtype=np.uint64)
    powers[0] = 1
    with np.errstate(over="ignore"):
        powers = np.cumprod(powers, dtype=np.uint64)
    salt = np.uint64(int(seed.integers(1 << 63, dtype=np.uint64)))
    ascii_values = _mix(np.arange(128, dtype=np.uint64) ^ salt)
    return powers, ascii_values, salt


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of uint64 that spreads every input bit over the output."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


_ASCII_WORD = np.zeros(128, dtype=bool)
for _c in b"0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz":
    _ASCII_WORD[_c] = True


def _codes(block: str) -> np.ndarray:
    if block.isascii():
        return np.frombuffer(block.encode("ascii"), dtype=np.uint8)
    return np.frombuffer(block.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _is_word(codes: np.ndarray) -> np.ndarray:
    if codes.dtype == np.uint8:
        return _ASCII_WORD[codes]
    wide = codes >= 128
    flags = _ASCII_WORD[np.where(wide, 0, codes)]
    if wide.any():
        at = np.flatnonzero(wide)
        distinct, inverse = np.unique(codes[at], return_inverse=True)
        alnum = np.fromiter((chr(c).isalnum() for c in distinct.tolist()), dtype=bool, count=len(distinct))
        flags[at] = alnum[inverse]
    return flags


def _values(codes: np.ndarray, ascii_values: np.ndarray, salt: np.uint64) -> np.ndarray:
    if codes.dtype == np.uint8:
        return ascii_values[codes]
    return _mix(codes.astype(np.uint64) ^ salt)


def word_spans(content: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, hashes) of the `\\w+` words of `content`, in text order (int64, int64, uint64)."""
    powers, ascii_values, salt = _keys()
    starts, ends, hashes = [], [], []
    pos, n = 0, len(content)
    while pos < n:
        block = content[pos : pos + BLOCK]
        codes = _codes(block)
        word = _is_word(codes)
        if pos + len(block) < n and word[-1]:
            breaks = np.flatnonzero(~word)
            if len(breaks):  # end the block after its last non-word character: no word is cut
                cut = int(breaks[-1]) + 1
                block, codes, word = block[:cut], codes[:cut], word[:cut]
        edges = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
        s = np.flatnonzero(edges == 1)
        e = np.flatnonzero(edges == -1)
        if len(s):
            with np.errstate(over="ignore"):
                sums = np.zeros(len(codes) + 1, dtype=np.uint64)
                np.cumsum(_values(codes, ascii_values, salt) * powers[: len(codes)], out=sums[1:])
                # sum of value[j] * m**(j - start + BLOCK): the same for the same word wherever it stands
                h = (sums[e] - sums[s]) * powers[BLOCK - s]
            long_words = np.flatnonzero(e - s > EXACT_HASH_ABOVE)
            for i in long_words.tolist():
                h[i] = np.uint64(hash(block[s[i] : e[i]]) & 0xFFFFFFFFFFFFFFFF) ^ salt
            starts.append(s + pos)
            ends.append(e + pos)
            hashes.append(h)
        pos += len(block)
    if not starts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy(), np.empty(0, dtype=np.uint64)
    return np.concatenate(starts), np.concatenate(ends), np.concatenate(hashes)
