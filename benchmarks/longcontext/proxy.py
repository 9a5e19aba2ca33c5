"""A recording proxy in front of an OpenAI-compatible server: every system's calls, recorded and replayable.

Clients use `proxy.url(tag)` (`http://127.0.0.1:PORT/t/TAG/v1`) as their base URL; the proxy strips the tag,
forwards the request to the upstream server and keeps the reply in a JSONL store keyed by the SHA-256 of the
path and the canonical JSON body, with the reply's usage and latency. The tag says whose call it was (system
and case), so calls and tokens are counted at one place, the same way, for every system. Modes:

- `readwrite`: a recorded request is answered from the store, any other is forwarded and recorded;
- `replay`: only recorded requests are answered; any other gets HTTP 599 `{"error": "not recorded: ..."}`;
- `record`: every request is forwarded and (re)recorded.

A request without `max_tokens` gets `max_tokens_cap` added before it is keyed and forwarded (a small model
asked without a limit may generate until its window is full), and one without `temperature` gets 0
(llama.cpp's default is 0.8), so every system runs greedy under the same cap.
Errors from the upstream server (e.g. HTTP 400) are recorded and replayed like replies.
`upstream_slots=N` forwards at most N requests at a time (the others wait in the proxy), so a system that
fans out (the reference library's `llm_query_batched` is unbounded) uses no more of a shared server's slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from aiohttp import ClientSession, ClientTimeout, web

__all__ = ["MODES", "RecordingProxy", "TagStats"]

MODES = ("readwrite", "replay", "record")


@dataclass
class TagStats:
    """What one tag's calls cost: calls, tokens (from the replies' usage), recorded model seconds."""

    calls: int = 0
    replayed: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model_seconds: float = 0.0
    """The upstream latency of the calls as recorded (live or replayed), summed."""

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "replayed": self.replayed,
            "errors": self.errors,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "model_seconds": round(self.model_seconds, 1),
        }


class RecordingProxy:
    """The proxy, served from a daemon thread of this process (`start()` / `stop()`)."""

    def __init__(
        self,
        upstream: str,
        store: str | Path,
        mode: str = "readwrite",
        max_tokens_cap: int = 1024,
        upstream_slots: int | None = None,
    ):
        if mode not in MODES:
            raise ValueError(f"unknown proxy mode {mode!r}: use one of {', '.join(MODES)}")
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.store = Path(store)
        self.mode = mode
        self.max_tokens_cap = max_tokens_cap
        self.upstream_slots = upstream_slots
        self._slots: asyncio.Semaphore | None = None
        self._records: dict[str, dict] = {}
        self._stats: dict[str, TagStats] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0
        if self.store.exists():
            for line in self.store.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    rec = json.loads(line)
                    self._records[rec["key"]] = rec

    # ---- addresses and figures
    def url(self, tag: str) -> str:
        """The OpenAI base URL whose calls are counted under `tag`."""
        return f"http://127.0.0.1:{self.port}/t/{urllib.parse.quote(tag, safe='')}/v1"

    def stats(self, tag: str) -> TagStats:
        with self._lock:
            s = self._stats.get(tag, TagStats())
            return TagStats(**vars(s))

    @staticmethod
    def key(path: str, body: object) -> str:
        canon = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(f"{path}\n{canon}".encode()).hexdigest()

    # ---- lifecycle
    def start(self) -> RecordingProxy:
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve())
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()

        threading.Thread(target=run, name="recording-proxy", daemon=True).start()
        ready.wait(30)
        if errors:
            raise RuntimeError(f"the recording proxy did not start: {errors[0]!r}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
            asyncio.run_coroutine_threadsafe(self._session.close(), self._loop).result(30)
            self._loop.call_soon_threadsafe(self._loop.stop)

    async def _serve(self) -> None:
        self._session = ClientSession(timeout=ClientTimeout(total=3600))
        self._slots = asyncio.Semaphore(self.upstream_slots) if self.upstream_slots else None
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/t/{tag}/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    # ---- requests
    async def _handle(self, request: web.Request) -> web.Response:
        tag = urllib.parse.unquote(request.match_info["tag"])
        path = "/" + request.match_info["tail"]
        if request.method == "GET":  # /v1/models, /health: not recorded, not counted
            async with self._session.get(self.upstream + path) as up:
                return web.Response(status=up.status, body=await up.read(), content_type="application/json")
        try:
            body = json.loads(await request.read() or b"{}")
        except json.JSONDecodeError:
            return web.json_response({"error": "the recording proxy needs a JSON body"}, status=400)
        if isinstance(body, dict) and body.get("stream"):
            return web.json_response(
                {"error": "the recording proxy does not relay streamed replies"}, status=400
            )
        if (
            isinstance(body, dict)
            and "messages" in body
            and not (body.get("max_tokens") or body.get("max_completion_tokens"))
        ):
            body["max_tokens"] = self.max_tokens_cap
        if isinstance(body, dict) and "messages" in body and "temperature" not in body:
            body["temperature"] = 0  # the benchmark's server setting: greedy for every system
        key = self.key(path, body)
        rec = self._records.get(key) if self.mode != "record" else None
        if rec is None:
            if self.mode == "replay":
                return web.json_response(
                    {"error": f"not recorded: {path} {key[:12]} (tag {tag})"}, status=599
                )
            async with self._slots or contextlib.nullcontext():
                started = time.monotonic()
                async with self._session.post(self.upstream + path, json=body) as up:
                    text = await up.text()
                    status = up.status
            try:
                reply = json.loads(text)
            except json.JSONDecodeError:
                reply = {"error": text[:2000]}
            rec = {
                "key": key,
                "path": path,
                "status": status,
                "reply": reply,
                "latency_s": round(time.monotonic() - started, 2),
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            self._records[key] = rec
            self.store.parent.mkdir(parents=True, exist_ok=True)
            with self.store.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            replayed = False
        else:
            replayed = True
        if "messages" in body:
            self._count(tag, rec, replayed)
        return web.json_response(rec["reply"], status=rec["status"])

    def _count(self, tag: str, rec: dict, replayed: bool) -> None:
        usage = rec["reply"].get("usage") or {} if isinstance(rec["reply"], dict) else {}
        with self._lock:
            s = self._stats.setdefault(tag, TagStats())
            s.calls += 1
            s.replayed += replayed
            s.errors += rec["status"] != 200
            s.input_tokens += int(usage.get("prompt_tokens") or 0)
            s.output_tokens += int(usage.get("completion_tokens") or 0)
            s.model_seconds += float(rec.get("latency_s") or 0)
