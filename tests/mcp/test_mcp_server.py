"""`rlm-kernel mcp` through the official MCP SDK's own client, over stdio and over streamable HTTP, against a
real `rlm` kernel and the local LLM test server (issue 30): every tool and resource, progress, cancellation,
attaching to a kernel started by jupyter_client (the notebook side sees the agent's variables and the other
way round), refusals of privileged operations, a non-rlm kernel refused, a wrong token refused over HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

mcp = pytest.importorskip("mcp")
import httpx2  # noqa: E402 - the HTTP client the SDK itself uses
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from tests.kernel_client import KernelHarness  # noqa: E402
from tests.llm_server import LLMTestServer  # noqa: E402
from tests.repl.conftest import llm_env  # noqa: E402
from tests.rootloop.script import Script, repl  # noqa: E402

pytestmark = [pytest.mark.timeout(600), pytest.mark.anyio]
RLM_KERNEL = str(Path(sys.executable).parent / "rlm-kernel")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer(mode="echo") as s:
        yield s


@pytest.fixture
def workdir(tmp_path: Path, server: LLMTestServer) -> Path:
    server.reset()
    (tmp_path / "notes.txt").write_text("alpha line\nthe secret code is 48213\nomega line\n")
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-should-never-be-read\n")
    return tmp_path


def _env(server: LLMTestServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(llm_env(server))
    return env


@asynccontextmanager
async def stdio_client(server: LLMTestServer, cwd: Path, *args: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=RLM_KERNEL, args=["mcp", *args], env=_env(server), cwd=str(cwd))
    async with Client(params, read_timeout_seconds=300) as client:
        yield client


def text_of(result) -> str:  # noqa: ANN001 - a CallToolResult
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def test_every_tool_over_stdio(server: LLMTestServer, workdir: Path) -> None:
    async with stdio_client(server, workdir) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"run_cell", "load_context", "rlm", "variables", "get_variable", "budget"}
        loaded = await client.call_tool("load_context", {"source": "notes.txt"})
        assert not loaded.is_error and "notes.txt" in text_of(loaded), text_of(loaded)
        ran = await client.call_tool(
            "run_cell", {"code": "hits = [l for l in context.splitlines() if 'code' in l]\nprint(hits)"}
        )
        assert not ran.is_error and "48213" in text_of(ran)
        asked = await client.call_tool("run_cell", {"code": "print(llm_query('echo this: hello agent'))"})
        assert "hello agent" in text_of(asked), text_of(asked)
        listed = await client.call_tool("variables", {})
        assert "hits" in text_of(listed)
        value = await client.call_tool("get_variable", {"name": "hits", "max_chars": 10})
        assert text_of(value).startswith("['the secr") and "characters in all" in text_of(value)
        spent = await client.call_tool("budget", {})
        assert not spent.is_error and "call" in text_of(spent).lower(), text_of(spent)
        failed = await client.call_tool("run_cell", {"code": "1 / 0"})
        assert failed.is_error and "ZeroDivisionError" in text_of(failed)
        after = await client.call_tool("run_cell", {"code": "print(len(hits))"})
        assert text_of(after).strip() == "1"  # a failing cell loses nothing
        bad = await client.call_tool("get_variable", {"name": "__class__"})
        assert bad.is_error and "variable of the notebook" in text_of(bad)
        summary = await client.read_resource("rlm://context")
        assert "notes.txt" in summary.contents[0].text


async def test_rlm_tool_answers_reports_progress_and_keeps_the_run(
    server: LLMTestServer, workdir: Path
) -> None:
    server.reply_with(
        Script(
            root=[
                repl("print([l for l in context.splitlines() if 'secret code' in l])", "Search first."),
                repl("FINAL('48213')", "The code printed it."),
            ]
        )
    )
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with stdio_client(server, workdir) as client:
        await client.call_tool("load_context", {"source": "notes.txt"})
        result = await client.call_tool(
            "rlm",
            {"question": "What is the secret code?", "max_iterations": 4},
            progress_callback=on_progress,
        )
        assert not result.is_error, text_of(result)
        report = result.structured_content
        assert report["answer"] == "48213" and report["termination"] == "final", report
        assert report["iterations"] == 2 and "secret code" in report["turns"][0]["code"]
        assert progress, "no progress notification during the run"
        jsonl = (await client.read_resource("rlm://run/last.jsonl")).contents[0].text
        assert jsonl.splitlines()[0].startswith('{"type": "run"') and len(jsonl.splitlines()) == 3
        html = (await client.read_resource("rlm://run/last.html")).contents[0].text
        assert "48213" in html
        seen = await client.call_tool("get_variable", {"name": "mcp_result"})
        assert "final" in text_of(seen)


async def test_privileged_operations_are_refused_with_the_rule(server: LLMTestServer, workdir: Path) -> None:
    attempts = {
        "%rlm set max_tokens=5": "not available",
        "load_context('.env', allow_secrets=True)": "not available to model-written code",
        "rlm_run('escape the budget', budget_usd=1000)": "not available to model-written code",
        "get_ipython()": "not available",
        "import os": "not",
    }
    async with stdio_client(server, workdir) as client:
        for code, reason in attempts.items():
            result = await client.call_tool("run_cell", {"code": code})
            assert result.is_error and reason in text_of(result), (code, text_of(result))
        secret = await client.call_tool("load_context", {"source": ".env"})
        assert "sk-should-never-be-read" not in text_of(secret)
        budget = await client.call_tool("rlm", {"question": "x", "budget_usd": -1})
        assert budget.is_error and "budget_usd must be a number" in text_of(budget)


async def test_cancel_interrupts_the_cell_and_its_model_calls(server: LLMTestServer, workdir: Path) -> None:
    async with stdio_client(server, workdir) as client:
        await client.call_tool("run_cell", {"code": "x = 1"})
        server.latency = 120.0  # a model call that would hold the cell for two minutes
        outcome: dict = {}
        async with anyio.create_task_group() as group:

            async def call() -> None:
                outcome["result"] = await client.call_tool(
                    "run_cell", {"code": "print(llm_query('slow question'))"}
                )

            group.start_soon(call)
            with anyio.fail_after(120):
                while not server._in_flight:  # noqa: SLF001 - the test server's count of open calls
                    await anyio.sleep(0.02)  # the call has reached the model: now cancel it
            cancelled = time.monotonic()
            group.cancel_scope.cancel()
        assert "result" not in outcome
        with anyio.fail_after(
            60
        ):  # generous on a busy machine; benchmarks/bench_mcp.py measures the 2 s target
            while server._in_flight:  # noqa: SLF001 - the server sees the broker hang up
                await anyio.sleep(0.02)
        print(f"model call closed {time.monotonic() - cancelled:.2f} s after the cancel")
        server.latency = 0.0
        after = await client.call_tool("run_cell", {"code": "print(x + 1)"})
        assert text_of(after).strip() == "2", text_of(after)  # the kernel is free again, state kept


async def test_attach_shares_the_namespace_with_the_notebook(server: LLMTestServer, workdir: Path) -> None:
    with KernelHarness(env=llm_env(server), cwd=str(workdir)) as notebook:
        assert notebook.execute("shared_from_notebook = 123").ok
        async with stdio_client(server, workdir, "--existing", notebook.km.connection_file) as client:
            seen = await client.call_tool("get_variable", {"name": "shared_from_notebook"})
            assert text_of(seen).strip() == "123", text_of(seen)
            await client.call_tool("run_cell", {"code": "made_by_agent = shared_from_notebook + 1"})
        back = notebook.execute("made_by_agent")
        assert back.result == "124", back
        assert notebook.is_alive()  # attaching and detaching leaves the person's kernel running


def test_a_kernel_that_is_not_rlm_is_refused(server: LLMTestServer, workdir: Path) -> None:
    with KernelHarness(kernel_name="python3", cwd=str(workdir)) as plain:
        done = subprocess.run(
            [RLM_KERNEL, "mcp", "--existing", plain.km.connection_file],
            input="", capture_output=True, text=True, timeout=120, env=_env(server), cwd=workdir,
        )  # fmt: skip
    assert done.returncode == 1 and "not an rlm kernel" in done.stderr, done.stderr


@pytest.fixture
def http_server(server: LLMTestServer, workdir: Path) -> Iterator[tuple[str, str]]:
    token = "test-token-0123456789abcdef"
    proc = subprocess.Popen(
        [RLM_KERNEL, "mcp", "--http", "--port", "0", "--token", token],
        env=_env(server), cwd=workdir, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        url = None
        lines = []
        deadline = time.monotonic() + 180
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()  # type: ignore[union-attr]
            if not line and proc.poll() is not None:
                break
            lines.append(line)
            match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
            url = match.group(1) if match else None
        assert url, "".join(lines)
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


async def test_http_needs_the_bearer_token(http_server: tuple[str, str]) -> None:
    url, token = http_server
    async with httpx2.AsyncClient() as raw:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0000000000"}, {"Authorization": token}):
            refused = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
            assert refused.status_code == 401, headers
    authorised = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=300)
    async with Client(
        streamable_http_client(url, http_client=authorised), read_timeout_seconds=300
    ) as client:
        result = await client.call_tool("run_cell", {"code": "print(6 * 7)"})
        assert text_of(result).strip() == "42"


async def test_rlm_over_mcp_replays_the_run_a_notebook_recorded(server: LLMTestServer, workdir: Path) -> None:
    """Same cache, same question: the `rlm` tool gives the `%%rlm` cell's answer from its recorded calls."""
    cache = workdir / "cache"
    server.reply_with(
        Script(root=[repl("print([l for l in context.splitlines() if 'code' in l])"), repl("FINAL('48213')")])
    )
    recording = llm_env(server) | {"RLM_CACHE": "readwrite", "RLM_CACHE_DIR": str(cache)}
    with KernelHarness(env=recording, cwd=str(workdir)) as notebook:
        assert notebook.execute("load_context('notes.txt')").ok
        cell = notebook.execute("%%rlm --max-iterations 4\nWhat is the secret code?")
        assert cell.ok and "48213" in cell.all_text, cell
    recorded = len(server.requests)
    server.reply_with(None)  # nothing scripted now: a call that is not in the cache would get an echo
    env = _env(server) | {"RLM_CACHE": "replay", "RLM_CACHE_DIR": str(cache)}
    params = StdioServerParameters(command=RLM_KERNEL, args=["mcp"], env=env, cwd=str(workdir))
    async with Client(params, read_timeout_seconds=300) as client:
        await client.call_tool("load_context", {"source": "notes.txt"})
        result = await client.call_tool("rlm", {"question": "What is the secret code?", "max_iterations": 4})
    assert not result.is_error, text_of(result)
    assert result.structured_content["answer"] == "48213", result.structured_content
    assert len(server.requests) == recorded  # every call came from the recording


async def test_what_an_agent_defines_stays_untrusted_in_the_persons_cells(
    server: LLMTestServer, workdir: Path
) -> None:
    """Trust follows who wrote the code (issue 26 class 2): a function an agent defines over MCP, called
    later by the person's own cell, still cannot do what only the person's code may."""
    with KernelHarness(env=llm_env(server), cwd=str(workdir)) as notebook:
        async with stdio_client(server, workdir, "--existing", notebook.km.connection_file) as client:
            made = await client.call_tool(
                "run_cell",
                {"code": "def summarise(path):\n    return load_context(path, allow_secrets=True)"},
            )
            assert not made.is_error, text_of(made)
        called = notebook.execute("summarise('.env')")
        assert not called.ok and "model-written" in called.all_text, called
        assert "sk-should-never-be-read" not in called.all_text
        own = notebook.execute("load_context('.env', allow_secrets=True)\nlen(context) > 0")
        assert own.ok and own.result == "True", own  # the person's own cell keeps its privilege
