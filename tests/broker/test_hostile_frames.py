"""Frames the broker must not take on trust, sent by a full escape inside the kernel (the sandbox policy off):
a typed key bound to a host nobody configured (the kernel has no network of its own), and a flood of requests
whose answers the kernel never reads, on a broker socket of its own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker.procs import broker_pids
from tests.broker.test_hostile_kernel import _kernel
from tests.confine.test_os_layer import REASON
from tests.kernel_client import ok
from tests.llm_server import LLMTestServer

pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

# A broker socket of the attacker's own (the supervisor hands one to whoever asks), driven without reading.
RAW = """
import os, socket, struct, json
from rlm_kernel.llm.broker_protocol import encode, recv_frame

def raw_broker():
    link.request("status", {})  # the link has taken the broker it was handed at start
    c = link._control
    c.send(b"s")
    data, fds, _f, _a = socket.recv_fds(c, 64, 1)
    assert fds, data
    return socket.socket(fileno=fds[0])

def ask(sock, message):
    sock.sendall(encode(message))
    return recv_frame(sock)
"""


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[LLMTestServer, LLMTestServer]]:
    with LLMTestServer() as s, LLMTestServer() as other:
        yield s, other


@pytest.fixture(autouse=True)
def _fresh(servers: tuple[LLMTestServer, LLMTestServer]) -> None:
    for s in servers:
        s.reset()


def test_a_forged_bind_opens_no_host(servers: tuple[LLMTestServer, LLMTestServer], tmp_path: Path) -> None:
    server, other = servers
    kernel = _kernel(server, tmp_path)
    try:
        probe = (
            f"OTHER = {other.openai_base_url!r}\n"
            "def tried(op, body):\n"
            "    try:\n"
            "        return 'accepted ' + str(link.request(op, body))\n"
            "    except Exception as exc:\n"
            "        return str(exc)[:300]\n"
        )
        ok(kernel, probe)
        for base, proxy in (("OTHER", "None"), ("BASE", "OTHER"), ("OTHER + '/'", "None")):
            body = f"{{'base_url': {base}, 'proxy': {proxy}, 'api_key': 'sk-attacker'}}"
            out = ok(kernel, f"print(tried('bind', {body}))").stdout
            assert "not configured when the kernel started" in out, (base, proxy, out)
        sent = ok(
            kernel,
            "try:\n"
            "    engine(base_url=OTHER, api_key='sk-attacker')\n"
            "    print('ENGINE')\n"
            "except Exception as exc:\n"
            "    print(str(exc)[:300])\n",
        ).stdout
        assert "ENGINE" not in sent and "refused" in sent, sent
        assert other.requests == []
        # honest control: a key typed for the endpoint configured at start is bound and used
        assert (
            "accepted"
            in ok(
                kernel, "print(tried('bind', {'base_url': BASE, 'proxy': None, 'api_key': 'sk-typed'}))"
            ).stdout
        )
        ok(kernel, "llm_query('honest')")
        assert len(server.requests) == 1
    finally:
        kernel.shutdown()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


FIELDS = (
    "FIELDS = {'provider': 'openai', 'base_url': BASE, 'proxy': None,\n"
    "          'api_key': 'broker-key-ref:RLM_API_KEY', 'concurrency': 4, 'max_connections': 4,\n"
    "          'max_retries': 0, 'timeout': 10.0, 'connect_timeout': 5.0, 'retry_after_cap': 1.0,\n"
    "          'cache': 'off', 'cache_dir': '/tmp', 'prices': {}, 'transport': 'aiohttp'}\n"
)

FLOODS = {
    # many budget scopes (a batch with no items makes its chain), then snapshots of all of them
    "snapshots": (
        "for i in range(10_000):\n"
        "    s.sendall(encode({'op': 'batch', 'id': 10 + i, 'engine': eid, 'items': [],\n"
        "        'scope': chain('scope-%d' % i)}))\n"
        "frame = encode({'op': 'budget', 'id': 99_999})\n"
        "count = 400\n"
    ),
    # requests whose error answer repeats what they sent (an unknown op of a megabyte)
    "echoes": "frame = encode({'op': 'x' * 2**20, 'id': 5})\ncount = 600\n",
}

KEPT = {
    # what the broker keeps after a request ended: budget scopes (id, label), engines (their fields)
    "labels": (
        "big = 'x' * 2**20\n"
        "frames = (encode({'op': 'batch', 'id': 10 + i, 'engine': eid, 'items': [], 'scope': {'budgets': [\n"
        "    {'id': 'scope-%d' % i, 'label': big, 'limits': {}, 'elapsed': 0.0, 'used': {}}]}})\n"
        "    for i in range(1500))\n"
    ),
    "ids": (
        "big = 'y' * 2**20\n"
        "frames = (encode({'op': 'batch', 'id': 10 + i, 'engine': eid, 'items': [], 'scope': {'budgets': [\n"
        "    {'id': big + str(i), 'label': '', 'limits': {}, 'elapsed': 0.0, 'used': {}}]}})\n"
        "    for i in range(1500))\n"
    ),
    "engines": (
        "big = {'m%d' % j: [1.0, 1.0] for j in range(12_000)}\n"
        "frames = (encode({'op': 'engine', 'id': 10 + i,\n"
        "    'fields': {**FIELDS, 'prices': big, 'timeout': 1 + i}})\n"
        "    for i in range(250))\n"
    ),
}


@pytest.mark.parametrize("flood", sorted(FLOODS))
def test_answers_the_kernel_never_reads_do_not_pile_up(
    servers: tuple[LLMTestServer, LLMTestServer], tmp_path: Path, flood: str
) -> None:
    server, _other = servers
    kernel = _kernel(server, tmp_path)
    try:
        ok(kernel, RAW)
        kernel_pid = kernel.km.provisioner.process.pid
        # many budget scopes (a batch with no items makes its chain), then snapshots of all of them, unread
        code = (
            "s = raw_broker()\n"
            "eid = ask(s, {'op': 'engine', 'id': 1, 'fields': dict(FIELDS)})['engine']\n"
            + FLOODS[flood]
            + "import threading, time\n"
            "sent = [0]\n"
            "def pump():\n"
            "    for _ in range(count):\n"
            "        s.sendall(frame)\n"  # blocks once the broker stops reading: that is the point
            "        sent[0] += 1\n"
            "threading.Thread(target=pump, daemon=True).start()\n"
            "deadline = time.monotonic() + 30\n"
            "while sent[0] < count and time.monotonic() < deadline:\n"
            "    time.sleep(0.1)\n"
            "print('sent', sent)\n"
        )
        ok(kernel, FIELDS)
        out = ok(kernel, code, timeout=180).stdout
        brokers = broker_pids(kernel_pid)
        assert brokers, out
        peak, series = 0.0, []
        deadline = time.monotonic() + 60  # the broker works through the requests it read (or stops reading)
        while time.monotonic() < deadline:
            now = max((_rss_mb(b) for b in broker_pids(kernel_pid) or brokers), default=0.0)
            series.append(round(now))
            peak = max(peak, now)
            if len(series) > 20 and max(series[-20:]) - min(series[-20:]) < 5:
                break  # settled
            time.sleep(0.25)
        assert peak < 300, (peak, series[::8], out)  # unread, the answers would be gigabytes
    finally:
        kernel.shutdown()


@pytest.mark.parametrize("kept", sorted(KEPT))
def test_what_the_broker_keeps_of_a_request_is_bounded(
    servers: tuple[LLMTestServer, LLMTestServer], tmp_path: Path, kept: str
) -> None:
    server, _other = servers
    kernel = _kernel(server, tmp_path)
    try:
        ok(kernel, RAW)
        ok(kernel, FIELDS)
        kernel_pid = kernel.km.provisioner.process.pid
        code = (
            "s = raw_broker()\n"
            "eid = ask(s, {'op': 'engine', 'id': 1, 'fields': dict(FIELDS)})['engine']\n"
            + KEPT[kept]
            + "import threading\n"
            "def drain():\n"
            "    while s.recv(1 << 20):\n"
            "        pass\n"
            "threading.Thread(target=drain, daemon=True).start()\n"
            "for f in frames:\n"
            "    s.sendall(f)\n"
            "s.sendall(encode({'op': 'status', 'id': 3}))\n"
        )
        ok(kernel, code, timeout=300)
        time.sleep(2)
        rss = max(_rss_mb(b) for b in broker_pids(kernel_pid))
        assert rss < 400, (kept, rss)  # kept whole, a gigabyte and more
        ok(kernel, "llm_query('honest after')")  # honest control (a new broker)
    finally:
        kernel.shutdown()


PENDING = {
    # 3000 batches of 200 KB under one id: a second request replaced the first in the count of running ones
    "one_live_id": ("7", 3000, 200_000),
    # a dozen batches of 40 MB, each its own id: few by count, a gigabyte by size
    "large_frames": ("10 + i", 12, 40_000_000),
}


@pytest.mark.parametrize("pending", sorted(PENDING))
def test_requests_waiting_on_the_provider_are_bounded(
    servers: tuple[LLMTestServer, LLMTestServer], tmp_path: Path, pending: str
) -> None:
    """The broker reads no further frame while MAX_PENDING requests (or MAX_PENDING_BYTES of frames) run. It
    counted running tasks by request id, so a second request under a live id replaced the first in the count
    (3000 batches of 200 KB under one id: the broker at 1.3 GB), and only by count (12 batches of 40 MB: 1 GB;
    third red team). Against a slow provider, what the broker accepts it holds."""
    rid, count, chars = PENDING[pending]
    server, _other = servers
    server.latency = 60  # every batch waits on the provider: what the broker accepts, it holds
    kernel = _kernel(server, tmp_path)
    try:
        ok(kernel, RAW)
        ok(kernel, FIELDS)
        kernel_pid = kernel.km.provisioner.process.pid
        code = (
            "from rlm_kernel.llm.broker_protocol import request_to_wire\n"
            "from rlm_kernel.llm.providers.base import ChatRequest\n"
            "s = raw_broker()\n"
            "eid = ask(s, {'op': 'engine', 'id': 1, 'fields': {**FIELDS, 'timeout': 600.0}})['engine']\n"
            f"text = {{'role': 'user', 'content': 'x' * {chars}}}\n"
            "item = request_to_wire(ChatRequest(model='m', messages=(text,), max_tokens=8))\n"
            "def frame(i):\n"
            f"    return encode({{'op': 'batch', 'id': {rid}, 'engine': eid, 'scope': {{}},\n"
            "                   'concurrency': 1, 'items': [item]})\n"
            "import threading, time\n"
            "sent = [0]\n"
            "def pump():\n"
            f"    for i in range({count}):\n"
            "        s.sendall(frame(i))\n"  # blocks once the broker stops reading: that is the point
            "        sent[0] += 1\n"
            "threading.Thread(target=pump, daemon=True).start()\n"
            "deadline = time.monotonic() + 20\n"
            f"while sent[0] < {count} and time.monotonic() < deadline:\n"
            "    time.sleep(0.1)\n"
            "print('sent', sent)\n"
        )
        out = ok(kernel, code, timeout=180).stdout
        time.sleep(3)
        rss = max(_rss_mb(b) for b in broker_pids(kernel_pid))
        assert rss < 350, (pending, rss, out)
    finally:
        kernel.shutdown()
