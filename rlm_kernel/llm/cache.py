"""Record/replay cache: SQLite, content-addressed by (provider, model, messages, parameters).

Modes: `off`, `readwrite` (default: read hits, record misses), `replay` (offline: a miss raises `ReplayMiss`).
WAL journal plus a busy timeout make concurrent writers (threads and processes) safe.

Authenticated (`auth`: the LLM broker's key, `private_files.cache_key_bytes`): every recorded entry carries an
HMAC-SHA256 `tag` over its key and answer; an entry whose tag does not match (rewritten by someone without the
key, e.g. a kernel that escaped its sandbox) is refused — a miss, re-fetched in readwrite mode, a named
`ReplayMiss` in replay mode — and counted in `refused`. Entries without a tag (recorded before tags, or
committed with a notebook) are served only when `trust_untagged` (the broker's start-time copy of a replay
cache).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rlm_kernel.llm.errors import ConfigError, LLMError, ReplayMiss
from rlm_kernel.llm.providers.base import ChatRequest, ChatResponse

__all__ = ["CACHE_FILE", "CacheEntry", "ResponseCache", "cache_key", "entry_tag"]

CACHE_FILE = "llm-cache.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    response_model TEXT,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    request_id TEXT,
    recorded_at TEXT NOT NULL,
    tag TEXT
)
"""


def _request_doc(provider: str, req: ChatRequest) -> dict:
    return {
        "provider": provider,
        "model": req.model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in req.messages],
        "params": req.params(),
    }


_INSERT = (
    "INSERT OR REPLACE INTO entries (key, provider, model, request, text, response_model, input_tokens, "
    "output_tokens, finish_reason, request_id, recorded_at, tag) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_FIELDS = "key, text, response_model, input_tokens, output_tokens, finish_reason, request_id, recorded_at"


def entry_tag(auth: bytes, fields: tuple) -> str:
    """The HMAC of an entry's `_FIELDS` (key and answer) under the broker's key."""
    doc = json.dumps(list(fields), ensure_ascii=False, separators=(",", ":"))
    return hmac.new(auth, doc.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def _row(provider: str, req: ChatRequest, resp: ChatResponse, recorded: str, auth: bytes | None) -> tuple:
    key = cache_key(provider, req)
    fields = (key, resp.text, resp.model, resp.input_tokens, resp.output_tokens, resp.finish_reason,
              resp.request_id, recorded)  # fmt: skip
    return (
        key,
        provider,
        req.model,
        json.dumps(_request_doc(provider, req), ensure_ascii=False),
        resp.text,
        resp.model,
        resp.input_tokens,
        resp.output_tokens,
        resp.finish_reason,
        resp.request_id,
        recorded,
        entry_tag(auth, fields) if auth is not None else None,
    )


def cache_key(provider: str, req: ChatRequest) -> str:
    """SHA-256 of the canonical JSON of (provider, model, messages, parameters)."""
    doc = json.dumps(_request_doc(provider, req), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    """A recorded response and when it was recorded (ISO 8601, UTC)."""

    response: ChatResponse
    recorded_at: str


class ResponseCache:
    """One SQLite file in `directory`; a connection per thread; `mode` is off | readwrite | replay."""

    def __init__(
        self,
        directory: str | Path,
        mode: str = "readwrite",
        *,
        auth: bytes | None = None,
        trust_untagged: bool = False,
    ) -> None:
        if mode not in ("off", "readwrite", "replay"):
            raise ConfigError(f"cache mode must be off, readwrite or replay, got {mode!r}", key="cache")
        self.mode = mode
        self.directory = Path(directory).expanduser().resolve()
        self.path = self.directory / CACHE_FILE
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._in_use: dict[sqlite3.Connection, bool] = {}  # connection → close it when its operation ends
        self._lock = threading.Lock()
        self.auth = auth
        self.trust_untagged = trust_untagged
        self.refused = 0
        """Entries refused because their tag did not match (see the module docstring)."""
        self._refused_keys: dict[str, bool] = {}  # cache key → whether the refused entry had a tag
        self._tag_col = "tag"

    def __repr__(self) -> str:
        return f"ResponseCache(mode={self.mode!r}, path={str(self.path)!r})"

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create the LLM cache directory {self.directory}: {exc.strerror}; "
                "set RLM_CACHE_DIR to a writable directory or RLM_CACHE=off",
                key="cache_dir",
            ) from None
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        for attempt in range(50):
            try:
                conn.execute("PRAGMA busy_timeout = 30000")
                conn.execute("PRAGMA trusted_schema = OFF")  # a file someone else wrote runs no SQL of theirs
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute(_SCHEMA)
                self._migrate(conn)
                break
            except sqlite3.OperationalError as exc:  # another process is creating the file right now
                if "locked" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.05)
        self._local.conn = conn
        with self._lock:
            self._all.append(conn)
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """A cache made before entries had tags: add the column (readwrite), or read it as none (replay)."""
        columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
        if "tag" in columns:
            return
        if self.mode == "readwrite":
            conn.execute("ALTER TABLE entries ADD COLUMN tag TEXT")
        else:
            self._tag_col = "NULL"

    def _verified(self, fields: tuple, tag: str | None) -> bool:
        """Whether an entry may be served: its tag matches, or it has none and untagged ones are trusted."""
        if self.auth is None:
            return True
        if tag is None:
            ok = self.trust_untagged
        else:
            ok = hmac.compare_digest(str(tag), entry_tag(self.auth, fields))
        if not ok:
            with self._lock:
                self.refused += 1
                self._refused_keys[str(fields[0])] = tag is not None
        return ok

    @contextmanager
    def _use(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection for one operation (`close` leaves it open until the operation ends)."""
        conn = self._conn()
        with self._lock:
            self._in_use[conn] = False
        try:
            yield conn
        finally:
            with self._lock:
                close_now = self._in_use.pop(conn, False)
            if close_now:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def get(self, provider: str, req: ChatRequest) -> CacheEntry | None:
        """The recorded entry for this call, or None (mode `off` always misses)."""
        if self.mode == "off":
            return None
        try:
            row = self._lookup(provider, req)
        except sqlite3.Error as exc:
            raise LLMError(
                f"the LLM cache {self.path} cannot be read ({exc}); fix or delete it, "
                "or set RLM_CACHE=off / RLM_CACHE_DIR to another directory"
            ) from None
        if row is None or not self._verified(row[:-1], row[-1]):
            return None
        _key, text, model, tin, tout, finish, rid, recorded, _tag = row
        return CacheEntry(ChatResponse(text, model or req.model, tin, tout, finish, rid), recorded)

    def get_many(self, provider: str, reqs: list[ChatRequest]) -> tuple[dict[int, CacheEntry], set[int]]:
        """A fan-out's lookups at once: the entries recorded for `reqs` (by index; one query per 500 keys),
        and the indices whose request repeats an earlier one in the list — look those up at their turn, when
        the earlier one may have recorded its answer (as one lookup per call would have found it)."""
        if self.mode == "off":
            return {}, set()
        first: dict[str, int] = {}
        repeats: set[int] = set()
        for i, req in enumerate(reqs):
            key = cache_key(provider, req)
            if key in first:
                repeats.add(i)
            else:
                first[key] = i
        keys = list(first)
        try:
            with self._use() as conn:
                found = self._select(conn, keys, first, reqs, self._tag_col, self._verified)
        except sqlite3.Error as exc:
            raise LLMError(
                f"the LLM cache {self.path} cannot be read ({exc}); fix or delete it, "
                "or set RLM_CACHE=off / RLM_CACHE_DIR to another directory"
            ) from None
        return found, repeats

    @staticmethod
    def _select(
        conn: sqlite3.Connection,
        keys: list[str],
        first: dict[str, int],
        reqs: list[ChatRequest],
        tag_col: str,
        verified: Any,
    ) -> dict[int, CacheEntry]:
        found: dict[int, CacheEntry] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            rows = conn.execute(
                f"SELECT {_FIELDS}, {tag_col} FROM entries WHERE key IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
            for row in rows:
                if not verified(row[:-1], row[-1]):
                    continue
                key, text, model, tin, tout, finish, rid, recorded, _tag = row
                i = first[key]
                response = ChatResponse(text, model or reqs[i].model, tin, tout, finish, rid)
                found[i] = CacheEntry(response, recorded)
        return found

    def _lookup(self, provider: str, req: ChatRequest) -> tuple | None:
        with self._use() as conn:
            return conn.execute(
                f"SELECT {_FIELDS}, {self._tag_col} FROM entries WHERE key = ?", (cache_key(provider, req),)
            ).fetchone()

    def miss_error(self, provider: str, req: ChatRequest) -> ReplayMiss:
        """The `ReplayMiss` naming a call that replay mode cannot answer."""
        user = next((m["content"] for m in reversed(req.messages) if m["role"] == "user"), "")
        preview = user if len(user) <= 80 else user[:77] + "..."
        key = cache_key(provider, req)
        if self._refused_keys.get(key):
            return ReplayMiss(
                f"replay mode: the recording of this call (cache key {key[:12]}, cache {self.path}) was "
                "refused: its authentication tag does not match, so it was changed after it was recorded "
                "(by something without the broker's key). Re-record it with RLM_CACHE=readwrite."
            )
        if key in self._refused_keys:
            return ReplayMiss(
                f"replay mode: the recording of this call (cache key {key[:12]}, cache {self.path}) carries "
                "no tag of this machine's broker (recorded elsewhere or before tags) and the cache is not "
                "the one set at start, so it is not trusted. Set RLM_CACHE=replay and RLM_CACHE_DIR when "
                "starting the kernel (recordings are then read from a copy made at start), or re-record it "
                "with RLM_CACHE=readwrite."
            )
        return ReplayMiss(
            f"replay mode: this call was never recorded — provider {provider!r}, model {req.model!r}, "
            f"max_tokens {req.max_tokens}, temperature {req.temperature}, prompt {preview!r} "
            f"(cache key {cache_key(provider, req)[:12]}, cache {self.path}). "
            "Record it by running once with RLM_CACHE=readwrite (or `%rlm set cache=readwrite`)."
        )

    def put(self, provider: str, req: ChatRequest, resp: ChatResponse) -> None:
        """Record a response (mode `readwrite` only; the last writer of a key wins, entries are identical)."""
        if self.mode != "readwrite":
            return
        recorded = datetime.now(UTC).isoformat(timespec="seconds")
        with self._use() as conn:
            conn.execute(_INSERT, _row(provider, req, resp, recorded, self.auth))

    def put_many(self, rows: list[tuple[str, ChatRequest, ChatResponse]]) -> list[str | None]:
        """Record several (provider, request, response) in one transaction (readwrite mode only); per row
        None, or why it was not recorded. If the transaction fails, each row is tried alone, so one row that
        cannot be stored does not cost the others their recording."""
        if self.mode != "readwrite":
            return [None] * len(rows)
        recorded = datetime.now(UTC).isoformat(timespec="seconds")
        with self._use() as conn:
            return self._put_many(conn, rows, recorded, self.auth)

    @staticmethod
    def _put_many(
        conn: sqlite3.Connection,
        rows: list[tuple[str, ChatRequest, ChatResponse]],
        recorded: str,
        auth: bytes | None,
    ) -> list[str | None]:
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(_INSERT, [_row(p, q, r, recorded, auth) for p, q, r in rows])
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return [None] * len(rows)
        except sqlite3.OperationalError:
            raise  # a locked or broken database: every row alike (the caller reports it for each)
        except Exception:  # noqa: BLE001 - one odd row: record the others one by one
            reasons: list[str | None] = []
            for p, q, r in rows:
                try:
                    conn.execute(_INSERT, _row(p, q, r, recorded, auth))
                    reasons.append(None)
                except Exception as exc:  # noqa: BLE001 - only this row is lost
                    reasons.append(f"{type(exc).__name__}: {exc}")
            return reasons

    def __len__(self) -> int:
        if not self.path.exists():
            return 0
        with self._use() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def close(self) -> None:
        """Close every connection this cache opened; one that an operation on another thread is using (a
        write that waited out a lock, say) is closed by that thread when the operation ends — closing a
        connection under a running statement crashes SQLite."""
        with self._lock:
            conns, self._all = self._all, []
            busy = [c for c in conns if c in self._in_use]
            for conn in busy:
                self._in_use[conn] = True
        for conn in conns:
            if conn in busy:
                continue
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()
