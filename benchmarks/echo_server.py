"""The fan-out benchmarks' server: an OpenAI-style echo endpoint lean enough never to be the limit.

`tests/llm_server.py` (aiohttp, three wire formats, every request recorded) spent ~0.25 ms CPU per call on
its one event loop and answered each wave of 64 replies one after another, so its own queue was part of the
client's wall time. This one does only what the fan-out needs: `POST .../chat/completions` → after
`--latency` seconds, the last user message back with word-count usage, on a bare asyncio protocol (HTTP/1.1
keep-alive, Content-Length bodies; ~0.1 ms CPU per call, most of it the kernel's TCP work). It runs in its
own process (`start`); `cpu_seconds(pid)` reads its CPU time so a benchmark reports it beside the client's.

Run alone: `python -m benchmarks.echo_server --latency 0.05` prints its base URL (append `/v1`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

__all__ = ["cpu_seconds", "main", "start", "take_trace"]

ROOT = Path(__file__).resolve().parents[1]


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) used so far by process `pid` (Linux /proc)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(latency: float) -> tuple[subprocess.Popen[str], str]:
    """Start the server in its own process; return it and its base URL (`http://127.0.0.1:PORT`)."""
    return start_server_process(["benchmarks.echo_server", "--latency", str(latency)], "echo server")


def start_server_process(module_args: list[str], what: str) -> tuple[subprocess.Popen[str], str]:
    """Run `python -m <module_args>` from the checkout (it prints its base URL first): (process, URL)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", *module_args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise RuntimeError(f"{what} did not start (printed {url!r})")
    return proc, url


def _reply(body: bytes, n: int) -> bytes:
    """The OpenAI chat completion echoing the request's last user message (usage: word counts)."""
    request = json.loads(body)
    messages = request.get("messages") or []
    text = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    words_in = sum(len(str(m.get("content") or "").split()) for m in messages)
    words_out = len(text.split())
    return json.dumps(
        {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", ""),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": words_in,
                "completion_tokens": words_out,
                "total_tokens": words_in + words_out,
            },
        },
        separators=(",", ":"),
    ).encode()


_TRACE: list[float] = []
"""Seconds each request spent in this server (arrival to reply written); `GET /_trace` takes them."""


def take_trace(url: str) -> list[float]:
    """The seconds each request answered since the last call spent in the server at `url` (then forgotten).

    With the wall time this splits a slot's cycle: C·wall/N = time in the server + time in the client."""
    import urllib.request

    with urllib.request.urlopen(url + "/_trace", timeout=30) as response:  # noqa: S310 - our own local server
        return json.loads(response.read())


class _Http(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: requests with a Content-Length body, answered in arrival order.

    No task or future per request: a timer per request fills its slot in `_slots`, and the answered slots at
    the head go out (HTTP/1.1 clients do not pipeline, so the head is almost always the one answered)."""

    def __init__(self, latency: float, counter: list[int]) -> None:
        self._latency = latency
        self._counter = counter
        self._buffer = b""
        self._transport: asyncio.Transport | None = None
        self._slots: deque[list[bytes | None]] = deque()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        loop = asyncio.get_running_loop()
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self._buffer[:end].decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
            if "chunked" in headers.get("transfer-encoding", "") or self._transport is None:
                if self._transport is not None:
                    refusal = _response(501, b"chunked request bodies are not supported", close=True)
                    self._transport.write(refusal)
                    self._transport.close()
                return
            size = int(headers.get("content-length", "0"))
            if len(self._buffer) < end + 4 + size:
                return
            body = self._buffer[end + 4 : end + 4 + size]
            self._buffer = self._buffer[end + 4 + size :]
            method, path, _ = (head[0].split(" ") + ["", ""])[:3]
            slot: list[bytes | None] = [None]
            self._slots.append(slot)
            if method == "GET" and path == "/_trace":
                times, _TRACE[:] = list(_TRACE), []
                self._fill(slot, _response(200, json.dumps(times).encode(), kind="application/json"))
                continue
            if method != "POST" or not path.endswith("/chat/completions"):
                self._fill(slot, _response(404, b"only POST .../chat/completions is served here"))
                continue
            self._counter[0] += 1
            loop.call_later(self._latency, self._answer, slot, body, self._counter[0], time.monotonic())

    def _answer(self, slot: list[bytes | None], body: bytes, n: int, arrived: float) -> None:
        try:
            reply = _response(200, _reply(body, n), kind="application/json")
        except (ValueError, AttributeError, TypeError) as exc:
            reply = _response(400, f"not an OpenAI chat request: {exc}".encode())
        self._fill(slot, reply)
        _TRACE.append(time.monotonic() - arrived)

    def _fill(self, slot: list[bytes | None], reply: bytes) -> None:
        slot[0] = reply
        out = []
        while self._slots and self._slots[0][0] is not None:
            out.append(self._slots.popleft()[0])
        if out and self._transport is not None and not self._transport.is_closing():
            self._transport.write(b"".join(out))  # type: ignore[arg-type]


def _response(status: int, body: bytes, *, close: bool = False, kind: str = "text/plain") -> bytes:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 501: "Not Implemented"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
        f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n"
    )
    return head.encode("latin-1") + body


async def _serve(latency: float, port: int) -> None:
    counter = [0]
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(lambda: _Http(latency, counter), "127.0.0.1", port, backlog=1024)
    print(f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.echo_server", description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every reply")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.latency, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
