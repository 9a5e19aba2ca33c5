"""Chunking: even parts at line/space boundaries (SPEC-01.02), 50-line windows with overlap (SPEC-01.08)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlm_kernel.analysis.chunking import MAX_LINE, line_starts, line_windows, split_even


def test_spec_01_08_chunks_of_50_lines_with_5_overlap() -> None:
    content = "".join(f"line {i}\n" for i in range(200))
    windows = line_windows(content)
    chunks = [content[a:b] for a, b in windows]
    assert [len(c.splitlines()) for c in chunks] == [50, 50, 50, 50, 20]
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert prev.splitlines()[-5:] == nxt.splitlines()[:5]
    assert chunks[1].splitlines()[0] == "line 45"


def test_line_windows_short_text_and_no_trailing_newline() -> None:
    assert line_windows("") == []
    assert line_windows("one line") == [(0, 8)]
    text = "a\nb\nc"
    assert [text[a:b] for a, b in line_windows(text, 2, 1)] == ["a\nb\n", "b\nc"]


def test_line_starts_counts_crlf_and_lone_cr_as_line_ends() -> None:
    assert line_starts("a\r\nb\rc\nd") == [0, 3, 5, 7]
    assert line_starts("a\n") == [0]


def test_spec_01_02_split_even_prefers_line_ends_then_whitespace() -> None:
    lines = "".join(f"{i:04d}\n" for i in range(100))  # 100 lines of 5 characters
    spans = split_even(lines, 4)
    assert [b - a for a, b in spans] == [125, 125, 125, 125]
    assert all(lines[b - 1] == "\n" for _, b in spans)
    words = "word " * 100
    spans = split_even(words, 3)
    assert all(words[b - 1] == " " for _, b in spans[:-1])
    assert max(b - a for a, b in spans) - min(b - a for a, b in spans) <= 5


def test_split_even_never_splits_words_and_cuts_blobs_only_past_max_part() -> None:
    assert split_even("apple", 50) == [(0, 5)]
    assert split_even("x" * 1000, 4) == [(0, 1000)]
    assert split_even("x" * 1000, 4, max_part=300) == [(0, 250), (250, 500), (500, 750), (750, 1000)]
    with pytest.raises(ValueError):
        split_even("x", 0)
    assert split_even("", 3) == []


@given(st.text(alphabet=st.sampled_from("ab \n\r\t☃"), max_size=400), st.integers(1, 30))
def test_split_even_parts_are_contiguous_and_cover_the_content(content: str, n: int) -> None:
    spans = split_even(content, n)
    if not content:
        assert spans == []
        return
    assert spans[0][0] == 0 and spans[-1][1] == len(content)
    assert all(a < b for a, b in spans)
    assert all(b == c for (_, b), (c, _) in zip(spans, spans[1:], strict=False))
    assert len(spans) <= n


@given(st.text(alphabet=st.sampled_from("ab\n\r"), max_size=300), st.integers(2, 12), st.integers(0, 1))
def test_line_windows_cover_every_line(content: str, size: int, overlap: int) -> None:
    windows = line_windows(content, size, overlap)
    if not content:
        assert windows == []
        return
    assert windows[0][0] == 0 and windows[-1][1] == len(content)
    for (_, b), (c, _) in zip(windows, windows[1:], strict=False):
        assert c <= b  # overlapping or touching, never a gap


@given(st.text(alphabet=st.sampled_from("ab \n\r"), max_size=3000))
def test_ranking_index_uses_the_same_50_line_windows(content: str) -> None:
    from rlm_kernel.analysis.ranking import ChunkIndex

    assert ChunkIndex.build(content).windows == line_windows(content)


def test_long_lines_count_as_several_so_one_line_files_give_bounded_chunks() -> None:
    one_line = " ".join(f"word{i}" for i in range(20_000))  # ~130K characters, no newline
    windows = line_windows(one_line)
    assert len(windows) > 1
    assert max(b - a for a, b in windows) <= 50 * MAX_LINE
    assert windows[0][0] == 0 and windows[-1][1] == len(one_line)
    assert all(one_line[a - 1] == " " for a, _ in windows[1:])  # broken after whitespace
    assert line_windows("x" * 1000, 2, 1, max_line=300) == [(0, 600), (300, 900), (600, 1000)]
