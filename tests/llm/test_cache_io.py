"""The bounded cache I/O: a wait counts only while an operation runs; a locked cache releases the queue."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlm_kernel.llm.cache import CACHE_FILE, ResponseCache
from rlm_kernel.llm.cache_io import CacheIO
from rlm_kernel.llm.providers.base import ChatRequest, ChatResponse


def _req(i: int) -> ChatRequest:
    return ChatRequest(model="m", messages=({"role": "user", "content": f"prompt {i}"},), max_tokens=8)


def _resp(i: int) -> ChatResponse:
    return ChatResponse(f"answer {i}", "m", 2, 2, "stop", None)


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    c = ResponseCache(tmp_path, "readwrite")
    c.put("p", _req(-1), _resp(-1))  # the file exists (and is in WAL mode) before another connection locks it
    yield c
    c.close()


def test_time_queued_behind_own_work_is_not_a_locked_cache(cache: ResponseCache) -> None:
    """A fan-out on a busy machine queues cache writes behind each other; that queue is not a lock held by
    another process, so a write that waited longer than `wait` for a worker is still recorded (it used to
    give up, report the answer unrecorded, and make the next reads in the same session miss)."""
    io = CacheIO(cache, wait=2.0)
    release = threading.Event()
    try:

        async def scenario() -> str | None:
            for _ in range(4):  # every worker busy with other cache work
                io._pool.submit(release.wait, 60)  # noqa: SLF001 - occupying the workers is the scenario
            write = asyncio.ensure_future(io.put("p", _req(1), _resp(1)))
            await asyncio.sleep(3.0)  # queued 1.5× longer than the wait (the scenario, not synchronisation)
            assert not write.done()  # still waiting for a worker, not given up
            release.set()
            return await write

        assert asyncio.run(scenario()) is None  # recorded
        assert not io.busy()
        entry = cache.get("p", _req(1))
        assert entry is not None and entry.response.text == "answer 1"
    finally:
        release.set()
        io.close()


def test_locked_cache_releases_queued_operations_at_once(cache: ResponseCache) -> None:
    """Another process holds the write lock: the running writes give up after `wait`, and the writes still
    queued behind them give up with them instead of waiting for a worker (SQLite's busy timeout is 30 s)."""
    io = CacheIO(cache, wait=0.5)
    other = sqlite3.connect(cache.path.parent / CACHE_FILE, timeout=5, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:

        async def scenario() -> list[str | None]:
            return await asyncio.gather(*(io.put("p", _req(i), _resp(i)) for i in range(12)))

        t0 = time.monotonic()
        reasons = asyncio.run(scenario())
        elapsed = time.monotonic() - t0
        assert all(r is not None and "locked" in r for r in reasons), reasons
        assert elapsed < 15.0, f"queued writes waited {elapsed:.1f} s for workers stuck on the lock"
        assert io.busy()
    finally:
        other.execute("ROLLBACK")
        other.close()
        io.close()


def test_a_fan_outs_writes_are_grouped_and_one_bad_row_costs_only_itself(
    cache: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers arriving while a write runs are written together in the next transaction (a worker hop and a
    commit per group, not per answer); a row SQLite cannot store (a lone surrogate) fails alone."""
    groups: list[int] = []
    put_many = cache.put_many

    def counted(rows: list) -> list:
        groups.append(len(rows))
        return put_many(rows)

    monkeypatch.setattr(cache, "put_many", counted)
    io = CacheIO(cache)
    bad = ChatResponse("bad \ud800 text", "m", 2, 2, "stop", None)
    try:

        async def scenario() -> list[str | None]:
            return await asyncio.gather(
                *(io.put("p", _req(i), bad if i == 7 else _resp(i)) for i in range(40))
            )

        reasons = asyncio.run(scenario())
    finally:
        io.close()
    assert sum(groups) == 40 and len(groups) < 40, groups
    assert [i for i, r in enumerate(reasons) if r is not None] == [7], reasons
    assert "UnicodeEncodeError" in (reasons[7] or "")
    assert cache.get("p", _req(7)) is None
    assert all(cache.get("p", _req(i)).response.text == f"answer {i}" for i in range(40) if i != 7)  # type: ignore[union-attr]


def test_many_lookups_at_once_find_recorded_entries_and_name_repeats(cache: ResponseCache) -> None:
    for i in (1, 3):
        cache.put("p", _req(i), _resp(i))
    found, repeats = cache.get_many("p", [_req(0), _req(1), _req(3), _req(1), _req(2)])
    assert {i: e.response.text for i, e in found.items()} == {1: "answer 1", 2: "answer 3"}
    assert repeats == {3}
