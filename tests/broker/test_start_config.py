"""The broker's start-time configuration, its ledger root, the supervisor's caps and authenticated cache
entries — each as a unit, on real processes, sockets and SQLite files."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from rlm_kernel.broker.ledger import ROOT_ID, Ledger
from rlm_kernel.broker.spend_store import SpendStore
from rlm_kernel.broker.start_config import StartConfig
from rlm_kernel.broker.supervisor import MAX_BROKERS, SPAWN_BURST, spawn_supervisor_process
from rlm_kernel.handover import request_broker
from rlm_kernel.llm.budget import BudgetExceeded
from rlm_kernel.llm.cache import ResponseCache
from rlm_kernel.llm.errors import ConfigError
from rlm_kernel.llm.providers.base import ChatRequest, ChatResponse
from rlm_kernel.sandbox.confine import landlock, root_rules
from tests.broker.procs import children

REQ = ChatRequest(model="m", messages=({"role": "user", "content": "q"},), max_tokens=8)


def _chain(sid: str, **limits: float) -> list[dict]:
    return [{"id": sid, "label": sid, "limits": limits, "elapsed": 0.0, "used": {}}]


def test_every_chain_hangs_below_the_start_time_root() -> None:
    ledger = Ledger(StartConfig(limits={"max_calls": 2}))
    for sid in ("a", "b"):
        budget, names = ledger.chain(_chain(sid))
        res = ledger.reserve(budget, REQ, {}, names)
        budget.settle(res, 1, 1, 0.0)
    for wire in (_chain("fresh"), _chain("wide", max_calls=100), None, []):
        budget, names = ledger.chain(wire)
        with pytest.raises(BudgetExceeded) as refused:
            ledger.reserve(budget, REQ, {}, names)
        assert refused.value.scope == ROOT_ID  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="may not name"):
        ledger.chain(_chain(ROOT_ID))


def test_the_kernel_session_budget_is_narrowed_and_spending_survives_a_new_ledger() -> None:
    start = StartConfig(limits={"max_calls": 5, "max_depth": 1})
    assert start.narrow({"max_calls": 9, "max_depth": None}) == {"max_calls": 5, "max_depth": 1}
    assert start.narrow({"max_calls": 3}) == {"max_calls": 3, "max_depth": 1}
    store = SpendStore.create()
    first = Ledger(start, store)
    budget, names = first.chain(_chain("s"))
    for _ in range(4):
        budget.settle(first.reserve(budget, REQ, {}, names), 1, 1, 0.0)
        first.persist()
    second = Ledger(start, store)  # the next broker, forked by the same supervisor
    assert second.root.snapshot()["calls"] == 4
    budget, names = second.chain(_chain("new-id"))
    budget.settle(second.reserve(budget, REQ, {}, names), 1, 1, 0.0)
    with pytest.raises(BudgetExceeded):
        second.reserve(budget, REQ, {}, names)


def test_cache_dir_prices_and_traffic_are_bounded(tmp_path: Path) -> None:
    start = StartConfig(cache_dir=tmp_path / "cache", prices={"m": (1.0, 2.0)})
    assert start.cache_dir_for(str(tmp_path / "cache" / "sub")) == str(tmp_path / "cache" / "sub")
    for bad in (str(tmp_path / "elsewhere"), str(tmp_path / "cache" / ".." / "x"), "/", 5, ""):
        with pytest.raises(ConfigError):
            start.cache_dir_for(bad)
    prices = start.prices_for({"m": [0, 0], "gpt-4.1": [0, 0], "new": [3, 4]})
    assert prices["m"] == (1.0, 2.0)  # never below the start-time price
    assert prices["gpt-4.1"][0] > 0  # nor below the built-in one
    assert prices["new"] == (3.0, 4.0)  # a higher (or new) price counts
    ok = {"concurrency": 4, "max_connections": 4, "max_retries": 2, "timeout": 5.0, "connect_timeout": 1.0}
    assert start.traffic({**ok, "retry_after_cap": 1.0})["max_retries"] == 2
    for bad in ({"max_retries": 10**6}, {"timeout": float("inf")}, {"concurrency": True}):
        with pytest.raises(ConfigError):
            start.traffic({**ok, "retry_after_cap": 1.0, **bad})


def test_root_rules_carve_code_and_private_places_out_of_a_root(tmp_path: Path) -> None:
    root = tmp_path / "project"
    for sub in (".venv/lib/site-packages", "data", ".config/rlm-kernel"):
        (root / sub).mkdir(parents=True)
    (root / "notes.txt").write_text("x")
    rules, kept = root_rules([str(root)], [str(root / ".venv")], [str(root / ".config" / "rlm-kernel")])
    granted = dict(rules)
    write = landlock.WRITE_FILE | landlock.MAKE_REG
    assert granted[str(root / "data")] & write == write
    assert granted[str(root / "notes.txt")] & landlock.WRITE_FILE
    assert not granted[str(root)] & (write | landlock.READ_FILE)  # listing only: something private below
    assert not granted[str(root / ".venv")] & write  # code: read, never write
    assert not granted.get(str(root / ".config" / "rlm-kernel"), 0) & (write | landlock.READ_FILE)
    assert kept == {str(root): [str(root / ".venv"), str(root / ".config" / "rlm-kernel")]}
    # a root that is itself on the import path gets no write at all; an unrelated root is whole
    assert root_rules([str(root)], [str(root)]) == ([(str(root), landlock.FS_READ)], {str(root): [str(root)]})
    plain = tmp_path / "plain"
    plain.mkdir()
    assert root_rules([str(plain)], [str(root)]) == (
        [(str(plain), landlock.FS_READ | landlock.FS_WRITE_FILES)],
        {},
    )


def test_root_rules_never_reach_through_a_link(tmp_path: Path) -> None:
    """A rule is made through a symlink (it names the target's inode): a link in a carved root to a private
    place, or to anywhere outside, must get no rule (a root's single rule does not reach through links)."""
    root = tmp_path / "project"
    (root / ".venv").mkdir(parents=True)
    private = tmp_path / "state" / "broker"
    private.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "state-link").symlink_to(private)
    (root / "out-link").symlink_to(elsewhere)
    (root / "file-link").symlink_to(private / "cache-key")
    rules, _kept = root_rules([str(root)], [str(root / ".venv")], [str(private)])
    named = {path for path, _rights in rules}
    assert not named & {str(root / n) for n in ("state-link", "out-link", "file-link")}, sorted(named)


def test_the_supervisor_caps_brokers_rate_limits_and_drops_junk() -> None:
    control = spawn_supervisor_process(dict(os.environ))
    try:
        sock, pid = request_broker(control)  # honest control
        sup = _supervisor_of(pid)
        control.sendall(b"x" * 1000)  # junk: dropped, nothing forked
        time.sleep(0.5)
        assert children(sup) == [pid]
        answers = []
        for _ in range(50):
            try:
                answers.append(request_broker(control, timeout=10))
            except OSError as exc:
                answers.append(exc)
        refused = [a for a in answers if isinstance(a, OSError)]
        assert len(answers) - len(refused) <= SPAWN_BURST
        assert refused and "too many" in str(refused[0])
        assert len(children(sup)) <= MAX_BROKERS
        for a in answers:
            if not isinstance(a, OSError):
                a[0].close()
        sock.close()
    finally:
        control.close()


def _supervisor_of(pid: int) -> int:
    text = Path(f"/proc/{pid}/stat").read_text()
    return int(text[text.rindex(")") + 2 :].split()[1])


def test_a_rewritten_or_untagged_entry_is_refused(tmp_path: Path) -> None:
    key = os.urandom(32)
    cache = ResponseCache(tmp_path, "readwrite", auth=key)
    cache.put("openai", REQ, ChatResponse("honest", "m", 1, 1, "stop", None))
    assert cache.get("openai", REQ).response.text == "honest"  # type: ignore[union-attr]
    with sqlite3.connect(tmp_path / "llm-cache.sqlite3") as conn:
        conn.execute("UPDATE entries SET text = 'POISONED'")
    assert cache.get("openai", REQ) is None and cache.refused == 1
    assert cache.get_many("openai", [REQ])[0] == {}
    with sqlite3.connect(tmp_path / "llm-cache.sqlite3") as conn:
        conn.execute("UPDATE entries SET tag = NULL")
    assert cache.get("openai", REQ) is None
    replay = ResponseCache(tmp_path, "replay", auth=key)
    assert replay.get("openai", REQ) is None
    assert "carries no tag of this machine's broker" in str(replay.miss_error("openai", REQ))
    with sqlite3.connect(tmp_path / "llm-cache.sqlite3") as conn:
        conn.execute("UPDATE entries SET tag = ?", ("0" * 64,))
    assert replay.get("openai", REQ) is None
    assert "authentication tag does not match" in str(replay.miss_error("openai", REQ))
    trusting = ResponseCache(tmp_path, "replay", auth=key, trust_untagged=True)
    assert trusting.get("openai", REQ) is None  # a wrong tag is refused even where untagged ones are trusted
    with sqlite3.connect(tmp_path / "llm-cache.sqlite3") as conn:
        conn.execute("UPDATE entries SET tag = NULL")
    assert trusting.get("openai", REQ) is not None
    assert ResponseCache(tmp_path, "replay", auth=os.urandom(32)).get("openai", REQ) is None


def test_an_old_cache_without_tags_is_migrated_or_read_as_is(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "llm-cache.sqlite3") as conn:
        conn.execute(
            "CREATE TABLE entries (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, "
            "request TEXT NOT NULL, text TEXT NOT NULL, response_model TEXT, input_tokens INTEGER NOT NULL, "
            "output_tokens INTEGER NOT NULL, finish_reason TEXT, request_id TEXT, recorded_at TEXT NOT NULL)"
        )
    key = os.urandom(32)
    replay = ResponseCache(tmp_path, "replay", auth=key, trust_untagged=True)
    assert replay.get("openai", REQ) is None  # read without a tag column, file unchanged
    with sqlite3.connect(tmp_path / "llm-cache.sqlite3") as conn:
        assert "tag" not in {r[1] for r in conn.execute("PRAGMA table_info(entries)")}
    rw = ResponseCache(tmp_path, "readwrite", auth=key)
    rw.put("openai", REQ, ChatResponse("new", "m", 1, 1, "stop", None))
    assert rw.get("openai", REQ).response.text == "new"  # type: ignore[union-attr]


def test_non_finite_or_negative_figures_in_a_frame_are_refused() -> None:
    from rlm_kernel.llm.broker_protocol import request_from_wire, request_to_wire

    ledger = Ledger(StartConfig())
    for limits in ({"max_calls": float("nan")}, {"max_usd": float("inf")}, {"max_calls": -1}):
        with pytest.raises(ValueError, match="must be a number"):
            ledger.chain(_chain("x", **limits))
    used = [{"id": "u", "label": "", "limits": {}, "elapsed": 0.0, "used": {"usd": float("nan")}}]
    with pytest.raises(ValueError):
        ledger.chain(used)
    wire = request_to_wire(REQ)
    assert request_from_wire(wire) == REQ
    for bad in (
        {"max_tokens": -(10**9)},
        {"max_tokens": 0},
        {"max_tokens": 8.5},
        {"temperature": float("nan")},
    ):
        with pytest.raises(ValueError):
            request_from_wire({**wire, **bad})


def test_a_replay_cache_named_in_the_settings_file_is_copied_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlm_kernel.broker.supervisor import _cache_settings
    from rlm_kernel.private_files import REPLAY_SNAPSHOT_VAR, replay_snapshot, snapshot_replay_cache

    recorded = tmp_path / "recorded"
    ResponseCache(recorded, "readwrite").put("openai", REQ, ChatResponse("kept", "m", 1, 1, "stop", None))
    (tmp_path / "cfg" / "rlm-kernel").mkdir(parents=True)
    (tmp_path / "cfg" / "rlm-kernel" / "config.toml").write_text(
        f'cache = "replay"\ncache_dir = "{recorded}"\n'
    )
    for name in ("RLM_CACHE", "RLM_CACHE_DIR", "RLM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv(REPLAY_SNAPSHOT_VAR, "")  # restored after the test
    copy = snapshot_replay_cache(_cache_settings())
    assert copy is not None and (copy / "llm-cache.sqlite3").is_file()
    assert copy.is_relative_to(tmp_path / "state")
    assert replay_snapshot(str(recorded.resolve())) == copy
    with sqlite3.connect(recorded / "llm-cache.sqlite3") as conn:  # a rewrite after the copy is not served
        conn.execute("UPDATE entries SET text = 'POISONED', tag = NULL")
    served = ResponseCache(copy, "replay", auth=os.urandom(32), trust_untagged=True).get("openai", REQ)
    assert served is not None and served.response.text == "kept"


def test_a_replay_cache_the_kernel_made_huge_or_odd_is_not_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel can make a file in a root sparse and huge (truncate), or a -wal that is no file: the
    supervisor copies nothing then (a copy would fill the disk or block its start)."""
    from rlm_kernel.private_files import MAX_REPLAY_COPY, REPLAY_SNAPSHOT_VAR, snapshot_replay_cache

    recorded = tmp_path / "recorded"
    ResponseCache(recorded, "readwrite").put("openai", REQ, ChatResponse("kept", "m", 1, 1, "stop", None))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv(REPLAY_SNAPSHOT_VAR, "")
    env = {"RLM_CACHE": "replay", "RLM_CACHE_DIR": str(recorded), "XDG_STATE_HOME": str(tmp_path / "state")}
    assert snapshot_replay_cache(env) is not None  # honest control: an ordinary recording is copied
    wal = recorded / "llm-cache.sqlite3-wal"
    wal.unlink(missing_ok=True)
    with open(wal, "wb") as f:
        f.truncate(MAX_REPLAY_COPY + 1)  # sparse: no disk used here, a gigabyte in a copy
    assert snapshot_replay_cache(env) is None
    wal.unlink()
    os.mkfifo(wal)
    assert snapshot_replay_cache(env) is None
    wal.unlink()
    wal.symlink_to(tmp_path / "elsewhere")
    assert snapshot_replay_cache(env) is None
    copies = list((tmp_path / "state" / "rlm-kernel" / "broker" / "replays").iterdir())
    assert len(copies) == 1  # the honest copy, made again each time: never the gigabyte
    assert sum(f.stat().st_size for f in copies[0].iterdir()) < 10 * 2**20
