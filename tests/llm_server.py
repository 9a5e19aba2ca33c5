"""Local LLM test server speaking the OpenAI, Anthropic and Gemini wire formats (owner: llm).

Runs aiohttp on 127.0.0.1 in a background thread: scripted replies, latency, faults; fixture `llm_server`.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

__all__ = [
    "Fault",
    "LLMTestServer",
    "RecordedRequest",
    "Reply",
    "count_words",
    "llm_server",
    "main",
]

Wire = str  # "openai" | "anthropic" | "gemini"


def count_words(text: str) -> int:
    """The server's deterministic token count: whitespace-separated words."""
    return len(text.split())


@dataclass
class RecordedRequest:
    """One request the server received (recorded before any fault or reply is applied)."""

    wire: Wire
    path: str
    headers: dict[str, str]
    query: dict[str, str]
    body: Any
    model: str
    prompt: str
    """All message text (system included) joined with newlines."""
    last_user: str
    """Text of the last user message (what `echo` replies with)."""
    max_tokens: int | None
    time: float
    ended: float | None = None
    """When the server finished with it (replied, failed or saw the client hang up); None while in flight."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Reply:
    """A scripted successful reply. `input_tokens`/`output_tokens` override the word counts when set."""

    text: str
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers (e.g. a gateway's `x-litellm-response-cost`)."""


@dataclass
class Fault:
    """A scripted failure; build one with the class methods (`Fault.http(503)`, `Fault.reset()`, ...)."""

    kind: str  # status | timeout | reset | malformed | missing_choices | odd_reply | trickle | big
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    seconds: float = 30.0
    echo_key: bool = False
    payload: Any = None
    """For `odd_reply`: the JSON reply sent with status 200; for `big`: the size in bytes."""

    @classmethod
    def http(cls, status: int, headers: dict[str, str] | None = None, body: str | None = None) -> Fault:
        """Answer with `status`, `headers` and a provider-style JSON error body (or `body`)."""
        return cls("status", status=status, headers=dict(headers or {}), body=body)

    @classmethod
    def rate_limited(cls, *, retry_after_ms: int | None = None, retry_after: str | None = None) -> Fault:
        """429 carrying `retry-after-ms` and/or `Retry-After` (seconds or an HTTP date)."""
        headers: dict[str, str] = {}
        if retry_after_ms is not None:
            headers["retry-after-ms"] = str(retry_after_ms)
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        return cls.http(429, headers)

    @classmethod
    def unauthorized(cls, *, echo_key: bool = True) -> Fault:
        """401; with `echo_key` the error message repeats the presented key (as some providers do)."""
        return cls("status", status=401, echo_key=echo_key)

    @classmethod
    def timeout(cls, seconds: float = 30.0) -> Fault:
        """Accept the request and send nothing for `seconds` (the client's read timeout should fire)."""
        return cls("timeout", seconds=seconds)

    @classmethod
    def reset(cls) -> Fault:
        """Send status and part of the body, then drop the connection."""
        return cls("reset")

    @classmethod
    def malformed(cls) -> Fault:
        """200 with a body that is not valid JSON."""
        return cls("malformed")

    @classmethod
    def missing_choices(cls) -> Fault:
        """200 with valid JSON lacking the reply (`choices` / `content` / `candidates`)."""
        return cls("missing_choices")

    @classmethod
    def odd_usage(cls, value: Any, text: str = "odd usage answer") -> Fault:
        """200 OpenAI reply whose usage counts are `value` (e.g. "n/a", "11.0", None)."""
        usage = {"prompt_tokens": value, "completion_tokens": value}
        return cls.odd_reply(_openai_reply({"role": "assistant", "content": text}, usage))

    @classmethod
    def null_parts(cls) -> Fault:
        """200 OpenAI reply whose content is a list of parts with null texts."""
        content = [{"type": "text", "text": None}, {"type": "text", "text": "kept part"}]
        return cls.odd_reply(_openai_reply({"role": "assistant", "content": content}))

    @classmethod
    def object_content(cls) -> Fault:
        """200 OpenAI reply whose `content` is an object, not text."""
        return cls.odd_reply(_openai_reply({"role": "assistant", "content": {"text": "not a string"}}))

    @classmethod
    def missing_message(cls) -> Fault:
        """200 OpenAI reply whose choice has no `message`."""
        return cls.odd_reply({"id": "x", "choices": [{"index": 0, "finish_reason": "stop"}]})

    @classmethod
    def refusal(cls) -> Fault:
        """200 OpenAI reply with no content: a refusal."""
        message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
        return cls.odd_reply(_openai_reply(message))

    @classmethod
    def tool_call(cls) -> Fault:
        """200 OpenAI reply with no content: a tool call."""
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return cls.odd_reply(_openai_reply(message, finish="tool_calls"))

    @classmethod
    def odd_reply(cls, payload: Any) -> Fault:
        """200 with `payload` as the JSON body."""
        return cls("odd_reply", payload=payload)

    @classmethod
    def trickle(cls, seconds: float = 30.0) -> Fault:
        """200 headers at once, then one byte of body a second for `seconds`."""
        return cls("trickle", seconds=seconds)

    @classmethod
    def big(cls, size: int = 10 * 1024 * 1024) -> Fault:
        """200 OpenAI reply whose answer text is `size` bytes long."""
        return cls("big", payload=size)


def _openai_reply(message: Any, usage: Any = None, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-odd",
        "object": "chat.completion",
        "model": "odd",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage if usage is not None else {"prompt_tokens": 3, "completion_tokens": 3},
    }


Scripted = str | Reply | Fault
ReplyFn = Callable[[RecordedRequest], Scripted | Awaitable[Scripted]]


def _content_text(content: Any) -> str:
    """Text of an OpenAI/Anthropic message content (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return str(content)


def _parse_openai(body: dict[str, Any]) -> tuple[str, list[tuple[str, str]], int | None]:
    messages = [(m.get("role", "user"), _content_text(m.get("content"))) for m in body.get("messages") or []]
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    return str(body.get("model", "")), messages, max_tokens


def _parse_anthropic(body: dict[str, Any]) -> tuple[str, list[tuple[str, str]], int | None]:
    messages: list[tuple[str, str]] = []
    if body.get("system"):
        messages.append(("system", _content_text(body["system"])))
    messages += [(m.get("role", "user"), _content_text(m.get("content"))) for m in body.get("messages") or []]
    return str(body.get("model", "")), messages, body.get("max_tokens")


def _gemini_parts_text(node: Any) -> str:
    if not isinstance(node, dict):
        return ""
    return "\n".join(p.get("text", "") for p in node.get("parts") or [] if isinstance(p, dict))


def _parse_gemini(model: str, body: dict[str, Any]) -> tuple[str, list[tuple[str, str]], int | None]:
    messages: list[tuple[str, str]] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        messages.append(("system", _gemini_parts_text(system)))
    for c in body.get("contents") or []:
        role = "assistant" if c.get("role") == "model" else "user"
        messages.append((role, _gemini_parts_text(c)))
    config = body.get("generationConfig") or {}
    return model, messages, config.get("maxOutputTokens")


def _presented_key(request: RecordedRequest) -> str:
    h = {k.lower(): v for k, v in request.headers.items()}
    auth = h.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:]
    return h.get("x-api-key") or h.get("x-goog-api-key") or request.query.get("key", "")


class LLMTestServer:
    """An in-process fake of three LLM wire formats, for tests and notebooks.

    Routes: OpenAI `POST /v1/chat/completions` (also `/chat/completions`), Anthropic `POST /v1/messages`,
    Gemini `POST /v1beta/models/{model}:generateContent`. Replies come from the FIFO `queue(...)` first, then
    from `when(...)` rules, then `reply_with(fn)`, else from `mode` (`echo`: the last user message; `count`:
    the number of words in the prompt). Usage is deterministic: input tokens = words of all messages,
    output tokens = words of the reply (cut to `max_tokens` words, finish reason "length").
    Set `require_key` to answer 401 unless the request presents that key.
    """

    def __init__(self, *, mode: str = "echo", latency: float = 0.0, host: str = "127.0.0.1", port: int = 0):
        if mode not in ("echo", "count"):
            raise ValueError(f"unknown mode {mode!r}: use 'echo' or 'count'")
        self.mode = mode
        self.latency = latency
        """Seconds every request waits before its reply (in addition to a `Reply.delay`)."""
        self.require_key: str | None = None
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._queue: deque[Scripted] = deque()
        self._reply_fn: ReplyFn | None = None
        self._rules: list[tuple[str, Scripted]] = []
        self._in_flight = 0
        self.max_in_flight = 0
        """The largest number of requests being handled at one time."""
        self._gate = 0
        self._gate_open: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.port: int = 0
        self._counter = 0

    # ---- scripting
    def queue(self, *items: Scripted) -> LLMTestServer:
        """Append replies (str / `Reply`) or `Fault`s, served one per request in arrival order."""
        with self._lock:
            self._queue.extend(items)
        return self

    def reply_with(self, fn: ReplyFn | None) -> LLMTestServer:
        """Answer requests (once the queue is empty) with `fn(request)`: a str, a `Reply` or a `Fault`, or an
        awaitable of one (an async `fn`, awaited on the server's loop, e.g. one forwarding to a model)."""
        self._reply_fn = fn
        return self

    def when(self, contains: str, reply: Scripted) -> LLMTestServer:
        """Answer any request whose prompt contains `contains` with `reply` (checked after the queue)."""
        with self._lock:
            self._rules.append((contains, reply))
        return self

    def hold_until_in_flight(self, count: int) -> LLMTestServer:
        """Hold every request until `count` are in flight at once (then open for good; 60 s at most).

        Proves a client overlaps calls without timing it: a client that sends fewer at once is held 60 s and
        `max_in_flight` shows it, however slow or busy the machine is."""
        self._gate = count
        self._gate_open = None
        return self

    async def _pass_gate(self) -> None:
        if not self._gate:
            return
        if self._gate_open is None:
            self._gate_open = asyncio.Event()  # made on the server's loop
        if self._in_flight >= self._gate:
            self._gate_open.set()
        try:
            await asyncio.wait_for(self._gate_open.wait(), 60.0)
        except TimeoutError:
            pass

    def reset(self) -> None:
        """Forget recorded requests, queued replies, rules, `reply_with`, latency and `require_key`."""
        with self._lock:
            self._requests.clear()
            self._queue.clear()
            self._rules.clear()
            self.max_in_flight = 0
        self._gate, self._gate_open = 0, None
        self._reply_fn = None
        self.latency = 0.0
        self.require_key = None

    @property
    def in_flight(self) -> int:
        """How many requests the server is handling now (a client that hung up no longer counts)."""
        with self._lock:
            return self._in_flight

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    # ---- addresses
    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` — the Anthropic / Gemini base URL."""
        return f"http://{self._host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1` — the OpenAI-compatible base URL."""
        return self.base_url + "/v1"

    def url_for(self, provider: str) -> str:
        """The base URL a client of `provider` (openai|anthropic|gemini) should be given."""
        return self.openai_base_url if provider in ("openai", "openai_compat") else self.base_url

    # ---- lifecycle
    def start(self) -> LLMTestServer:
        """Start serving in a daemon thread; returns once the port is bound."""
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=run, name="llm-test-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise RuntimeError(f"LLM test server failed to start: {errors[0]!r}")
        return self

    async def _start_site(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post(r"/v1beta/models/{model}:generateContent", self._gemini)
        app.router.add_post(r"/v1/models/{model}:generateContent", self._gemini)
        app.router.add_get("/_test/requests", self._list_requests)
        app.router.add_get("/health", self._health)
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, shutdown_timeout=0.5, handler_cancellation=True
        )  # a client that hangs up cancels its handler: `_in_flight` counts the calls really still open
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port, backlog=1024)
        await site.start()
        server = site._server  # noqa: SLF001 - aiohttp exposes no public accessor for the bound port
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        """Stop serving and join the thread."""
        loop = self._loop
        if loop is None or not loop.is_running():
            return

        async def shutdown() -> None:
            if self._runner is not None:
                await self._runner.cleanup()
                self._runner = None
            loop.stop()

        asyncio.run_coroutine_threadsafe(shutdown(), loop)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> LLMTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- handlers
    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def _list_requests(self, request: web.Request) -> web.Response:
        return web.json_response([r.to_dict() for r in self.requests])

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "openai")

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "anthropic")

    async def _gemini(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "gemini")

    async def _handle(self, request: web.Request, wire: Wire) -> web.StreamResponse:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        recorded: list[RecordedRequest] = []
        try:
            await self._pass_gate()
            return await self._respond(request, wire, recorded)
        finally:
            with self._lock:
                self._in_flight -= 1
                for rec in recorded:
                    rec.ended = time.time()

    async def _respond(
        self, request: web.Request, wire: Wire, recorded: list[RecordedRequest]
    ) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            return self._error(wire, 400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return self._error(wire, 400, "request body must be a JSON object")
        if wire == "openai":
            model, messages, max_tokens = _parse_openai(body)
        elif wire == "anthropic":
            model, messages, max_tokens = _parse_anthropic(body)
        else:
            model, messages, max_tokens = _parse_gemini(request.match_info["model"], body)
        users = [text for role, text in messages if role == "user"]
        rec = RecordedRequest(
            wire=wire,
            path=request.path,
            headers=dict(request.headers),
            query=dict(request.query),
            body=body,
            model=model,
            prompt="\n".join(text for _, text in messages),
            last_user=users[-1] if users else "",
            max_tokens=max_tokens,
            time=time.time(),
        )
        recorded.append(rec)
        with self._lock:
            self._requests.append(rec)
            self._counter += 1
            n = self._counter
        scripted = self._next_reply(rec)
        if inspect.isawaitable(scripted):
            try:
                scripted = await scripted
            except Exception as exc:  # noqa: BLE001 - a broken test script becomes a visible 500
                scripted = Fault.http(
                    500, body=json.dumps({"error": {"message": f"reply_with failed: {exc!r}"}})
                )
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.require_key is not None and _presented_key(rec) != self.require_key:
            scripted = Fault.unauthorized()
        if isinstance(scripted, Fault):
            return await self._fault(request, wire, scripted, rec)
        reply = scripted if isinstance(scripted, Reply) else Reply(str(scripted))
        if reply.delay:
            await asyncio.sleep(reply.delay)
        return self._success(wire, rec, reply, n)

    def _next_reply(self, rec: RecordedRequest) -> Scripted:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            rules = list(self._rules)
        for contains, reply in rules:
            if contains in rec.prompt:
                return reply
        fn = self._reply_fn
        if fn is not None:
            try:
                return fn(rec)
            except Exception as exc:  # noqa: BLE001 - a broken test script becomes a visible 500
                return Fault.http(500, body=json.dumps({"error": {"message": f"reply_with failed: {exc!r}"}}))
        if self.mode == "count":
            return str(count_words(rec.prompt))
        return rec.last_user

    def _success(self, wire: Wire, rec: RecordedRequest, reply: Reply, n: int) -> web.Response:
        text = reply.text
        finish = reply.finish_reason
        words = text.split()
        if rec.max_tokens is not None and reply.output_tokens is None and len(words) > int(rec.max_tokens):
            text = " ".join(words[: int(rec.max_tokens)])
            finish = finish or "length"
        in_tok = reply.input_tokens if reply.input_tokens is not None else count_words(rec.prompt)
        out_tok = reply.output_tokens if reply.output_tokens is not None else count_words(text)
        rid = f"req-{n}"
        if wire == "openai":
            payload: dict[str, Any] = {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": rec.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": finish or "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": in_tok,
                    "completion_tokens": out_tok,
                    "total_tokens": in_tok + out_tok,
                },
            }
            headers = {"x-request-id": rid}
        elif wire == "anthropic":
            stop = {"length": "max_tokens", "stop": "end_turn"}.get(finish or "stop", finish)
            payload = {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "model": rec.model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": in_tok, "output_tokens": out_tok},
            }
            headers = {"request-id": rid}
        else:
            stop = {"length": "MAX_TOKENS", "stop": "STOP"}.get(finish or "stop", finish)
            payload = {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": text}]},
                        "finishReason": stop,
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": in_tok,
                    "candidatesTokenCount": out_tok,
                    "totalTokenCount": in_tok + out_tok,
                },
                "modelVersion": rec.model,
                "responseId": rid,
            }
            headers = {}
        return web.json_response(payload, headers={**headers, **reply.headers})

    def _error(
        self, wire: Wire, status: int, message: str, headers: dict[str, str] | None = None
    ) -> web.Response:
        if wire == "anthropic":
            payload: dict[str, Any] = {"type": "error", "error": {"type": "api_error", "message": message}}
        elif wire == "gemini":
            payload = {"error": {"code": status, "message": message, "status": "ERROR"}}
        else:
            payload = {"error": {"message": message, "type": "api_error", "code": status}}
        return web.json_response(payload, status=status, headers=headers or {})

    async def _fault(
        self, request: web.Request, wire: Wire, fault: Fault, rec: RecordedRequest
    ) -> web.StreamResponse:
        if fault.kind == "status":
            if fault.body is not None:
                return web.Response(
                    status=fault.status,
                    text=fault.body,
                    headers=fault.headers,
                    content_type="application/json",
                )
            message = f"scripted error {fault.status}"
            if fault.status == 401:
                key = _presented_key(rec)
                message = f"Incorrect API key provided: {key}" if fault.echo_key else "Invalid API key"
            elif fault.status == 429:
                message = "Rate limit reached; please retry later"
            return self._error(wire, fault.status, message, fault.headers)
        if fault.kind == "timeout":
            await asyncio.sleep(fault.seconds)
            return self._error(wire, 504, "scripted timeout elapsed")
        if fault.kind == "malformed":
            return web.Response(
                status=200, text='{"id": "broken", "choices": [', content_type="application/json"
            )
        if fault.kind == "missing_choices":
            payload = {"id": "no-reply", "object": "chat.completion", "model": rec.model, "usage": {}}
            return web.json_response(payload)
        if fault.kind == "odd_reply":
            return web.json_response(fault.payload)
        if fault.kind == "big":
            text = "x" * int(fault.payload)
            return web.json_response(_openai_reply({"role": "assistant", "content": text}))
        if fault.kind == "trickle":
            resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            resp.content_length = 10_000
            await resp.prepare(request)
            for _ in range(int(fault.seconds)):
                await resp.write(b" ")
                await asyncio.sleep(1.0)
            return resp
        if fault.kind == "reset":
            resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            resp.content_length = 4096
            await resp.prepare(request)
            await resp.write(b'{"id": "cut-off", "choices": [{"message": {"content": "par')
            transport = request.transport
            if transport is not None:
                transport.abort()
            raise asyncio.CancelledError()
        raise ValueError(f"unknown fault kind {fault.kind!r}")


# ---- pytest fixture
@pytest.fixture
def llm_server() -> Iterator[LLMTestServer]:
    """A fresh `LLMTestServer` (echo mode, no latency) on a random 127.0.0.1 port, stopped after the test."""
    server = LLMTestServer().start()
    try:
        yield server
    finally:
        server.stop()


# ---- command line
def _scripted_from_json(item: Any) -> Scripted:
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and "fault" in item:
        kind = item["fault"]
        if kind == "status":
            return Fault.http(int(item.get("status", 500)), item.get("headers"), item.get("body"))
        if kind == "timeout":
            return Fault.timeout(float(item.get("seconds", 30.0)))
        if kind in ("reset", "malformed", "missing_choices"):
            return Fault(kind)
        raise ValueError(f"unknown fault {kind!r} in script")
    if isinstance(item, dict) and "text" in item:
        return Reply(**item)
    raise ValueError(f"cannot read script item {item!r}: use a string, {{'text': ...}} or {{'fault': ...}}")


def _load_script(server: LLMTestServer, path: Path) -> None:
    """Read a script: {"mode", "latency", "replies": [...], "rules": [{"contains": s, "reply": r}]}."""
    data = json.loads(path.read_text())
    server.mode = data.get("mode", "echo")
    server.latency = float(data.get("latency", server.latency))
    server.queue(*(_scripted_from_json(i) for i in data.get("replies", [])))
    for rule in data.get("rules", []):
        server.when(rule["contains"], _scripted_from_json(rule["reply"]))


def main(argv: list[str] | None = None) -> None:
    """`python -m tests.llm_server --port 0 --mode echo|count|script.json [--latency S]`; prints the URL."""
    parser = argparse.ArgumentParser(prog="python -m tests.llm_server", description=LLMTestServer.__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", default="echo", help="echo, count, or a path to a JSON script")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every reply")
    args = parser.parse_args(argv)
    is_script = not re.fullmatch(r"echo|count", args.mode)
    server = LLMTestServer(mode="echo" if is_script else args.mode, latency=args.latency, port=args.port)
    if is_script:
        _load_script(server, Path(args.mode))
    server.start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
        sys.exit(0)


if __name__ == "__main__":
    main()
