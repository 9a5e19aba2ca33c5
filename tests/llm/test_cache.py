"""Record/replay cache over real HTTP: hits, replay misses, modes, concurrent writers (threads, processes)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rlm_kernel.llm import BatchError, ReplayMiss
from rlm_kernel.llm.cache import CACHE_FILE
from tests.llm.conftest import MakeClient
from tests.llm_server import LLMTestServer, Reply

ROOT = Path(__file__).resolve().parents[2]


def test_hit_is_served_without_a_request(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    client = make_client(cache="readwrite")
    first = client.complete("tell me", max_tokens=20)
    second = client.complete("tell me", max_tokens=20)
    assert not first.cached and second.cached
    assert (second.text, second.input_tokens, second.output_tokens) == (
        first.text,
        first.input_tokens,
        first.output_tokens,
    )
    assert len(llm_server.requests) == 1
    client.complete("tell me", max_tokens=21)  # different parameters → different entry
    client.complete("tell me", max_tokens=20, model="other-model")
    assert len(llm_server.requests) == 3


def test_replay_is_offline_and_identical(
    make_client: MakeClient, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    llm_server.reply_with(lambda r: Reply(f"recorded: {r.last_user}"))
    recorder = make_client(cache="readwrite", cache_dir=str(tmp_path / "c"))
    recorded = recorder.complete_batch([f"q{i}" for i in range(5)])
    llm_server.stop()
    replayer = make_client(cache="replay", cache_dir=str(tmp_path / "c"))
    replayed = replayer.complete_batch([f"q{i}" for i in range(5)])
    assert [c.text for c in replayed] == [c.text for c in recorded]
    assert all(c.cached for c in replayed)


def test_a_fan_out_is_looked_up_at_once_and_a_repeat_finds_the_earlier_answer(
    make_client: MakeClient, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    """A fan-out's items are looked up in one query; an item repeating an earlier one is looked up at its
    turn, so (one at a time) it is answered from what the earlier one recorded; replay fails only misses."""
    recorder = make_client(cache="readwrite", cache_dir=str(tmp_path / "c"))
    first = recorder.complete_batch(["a", "b", "a"], concurrency=1)
    assert [c.text for c in first] == ["a", "b", "a"] and [c.cached for c in first] == [False, False, True]
    assert len(llm_server.requests) == 2
    again = recorder.complete_batch(["b", "a"])
    assert all(c.cached for c in again) and len(llm_server.requests) == 2
    replayer = make_client(cache="replay", cache_dir=str(tmp_path / "c"))
    with pytest.raises(BatchError) as info:
        replayer.complete_batch(["a", "never recorded", "b"])
    assert sorted(info.value.errors) == [1] and "never recorded" in info.value.errors[1]
    assert [c.text if c else None for c in info.value.results] == ["a", None, "b"]
    assert len(llm_server.requests) == 2


def test_replay_miss_names_the_call(make_client: MakeClient, llm_server: LLMTestServer) -> None:
    client = make_client(cache="replay")
    with pytest.raises(ReplayMiss) as info:
        client.complete("a question never recorded", max_tokens=33)
    text = str(info.value)
    assert "never recorded" in text and "a question never recorded" in text
    assert "test-openai" in text and "max_tokens 33" in text and "RLM_CACHE=readwrite" in text
    assert llm_server.requests == []


def test_off_mode_never_reads_or_writes(
    make_client: MakeClient, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    client = make_client(cache="off", cache_dir=str(tmp_path / "off"))
    client.complete("x")
    client.complete("x")
    assert len(llm_server.requests) == 2
    assert not (tmp_path / "off" / CACHE_FILE).exists()


def test_entry_keeps_text_usage_model_and_time(make_client: MakeClient, tmp_path: Path) -> None:
    make_client(cache="readwrite", cache_dir=str(tmp_path / "e")).complete("keep me")
    con = sqlite3.connect(tmp_path / "e" / CACHE_FILE)
    row = con.execute(
        "SELECT text, input_tokens, output_tokens, response_model, recorded_at FROM entries"
    ).fetchone()
    assert row[:4] == ("keep me", 2, 2, "test-openai") and row[4].startswith("20")


def test_concurrent_thread_writers(
    make_client: MakeClient, llm_server: LLMTestServer, tmp_path: Path
) -> None:
    cache_dir = str(tmp_path / "threads")
    clients = [make_client(cache="readwrite", cache_dir=cache_dir) for _ in range(4)]
    errors: list[BaseException] = []

    def work(c: int) -> None:
        try:
            clients[c].complete_batch(
                [f"shared {i}" for i in range(30)] + [f"own {c} {i}" for i in range(10)]
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(c,)) for c in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(clients[0].cache) == 30 + 4 * 10


_WORKER = """
import json, sys
from rlm_kernel.llm import LLMClient, load_config
base_url, cache_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = load_config(environ={}, use_settings=False, provider="openai", base_url=base_url, model="m",
                  cache="readwrite", cache_dir=cache_dir)
client = LLMClient(cfg)
out = client.complete_batch([f"shared {i}" for i in range(40)] + [f"own {n} {i}" for i in range(10)])
print(json.dumps(sum(c.cached for c in out)))
"""


def test_concurrent_process_writers(llm_server: LLMTestServer, tmp_path: Path) -> None:
    cache_dir = str(tmp_path / "procs")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, llm_server.openai_base_url, cache_dir, str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in range(3)
    ]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        json.loads(out)
    con = sqlite3.connect(Path(cache_dir) / CACHE_FILE)
    assert con.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 40 + 3 * 10
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
