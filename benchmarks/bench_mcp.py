"""`rlm-kernel mcp`: a `run_cell` round trip through the MCP server (the SDK's client over stdio, attached to
the kernel) against a direct jupyter_client execute on the same kernel, alternated in the same run (target
≤ 1.5×); and how long a cancelled `run_cell` leaves its model call in flight (target ≤ 2 s)."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import anyio

from benchmarks.common import Figure
from tests.kernel_client import KernelHarness
from tests.llm_server import LLMTestServer
from tests.repl.conftest import llm_env

__all__ = ["run"]

TARGET = 1.5
CANCEL_TARGET = 2.0


async def _measure(trips: int, cancels: int) -> list[Figure]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    with LLMTestServer(mode="echo") as server:
        harness = KernelHarness(env=llm_env(server))
        try:
            env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | llm_env(server)
            params = StdioServerParameters(
                command=str(Path(sys.executable).parent / "rlm-kernel"),
                args=["mcp", "--existing", harness.km.connection_file],
                env=env,
            )
            async with Client(params, read_timeout_seconds=300) as client:

                async def through_mcp() -> float:
                    t = time.perf_counter()
                    await client.call_tool("run_cell", {"code": "x = 1"})
                    return time.perf_counter() - t

                def direct() -> float:
                    t = time.perf_counter()
                    harness.execute("x = 1")
                    return time.perf_counter() - t

                await through_mcp()
                direct()
                pairs = []
                for i in range(trips):
                    if i % 2:
                        b = direct()
                        pairs.append((await through_mcp(), b))
                    else:
                        a = await through_mcp()
                        pairs.append((a, direct()))
                ratios = [a / b for a, b in pairs]
                trip = Figure(
                    name="run_cell round trip through MCP",
                    value=statistics.median(a for a, _ in pairs),
                    unit="s",
                    baseline=statistics.median(b for _, b in pairs),
                    baseline_name="direct jupyter_client execute",
                    target=f"<= {TARGET}x",
                    met=statistics.median(ratios) <= TARGET,
                    note=f"`x = 1`, stdio, attached; median of {trips} pair ratios "
                    f"(spread {min(ratios):.2f}–{max(ratios):.2f}x)",
                    paired_ratio=statistics.median(ratios),
                )
                waits = []
                for _ in range(cancels):
                    server.latency = 60.0
                    with anyio.move_on_after(1.5):
                        await client.call_tool("run_cell", {"code": "llm_query('slow')"})
                    cancelled = time.perf_counter()
                    while server._in_flight:  # noqa: SLF001 - the test server's own count
                        await anyio.sleep(0.01)
                    waits.append(time.perf_counter() - cancelled)
                    server.latency = 0.0
                    await client.call_tool("run_cell", {"code": "x = 1"})  # the kernel is free again
                worst = max(waits)
                cancel = Figure(
                    name="cancelled run_cell: model call left in flight",
                    value=worst,
                    unit="s",
                    target=f"<= {CANCEL_TARGET} s",
                    met=worst <= CANCEL_TARGET,
                    note=f"worst of {cancels} cancels (median {statistics.median(waits):.3f} s)",
                )
                return [trip, cancel]
        finally:
            harness.shutdown()


def run(quick: bool = True) -> list[Figure]:
    return anyio.run(_measure, 40 if quick else 200, 3 if quick else 10)
