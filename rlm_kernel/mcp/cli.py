"""`rlm-kernel mcp`: serve one `rlm` kernel over MCP — stdio (default) or streamable HTTP on 127.0.0.1 with a
bearer token — attached to a running kernel (`--existing`) or owning one it starts and stops."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from rlm_kernel.mcp.http_auth import BearerToken, new_token

__all__ = ["add_parser", "main", "serve"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    mcp = sub.add_parser("mcp", help="serve the rlm kernel to agents over the Model Context Protocol")
    mcp.add_argument(
        "--existing",
        nargs="?",
        const="",
        default=None,
        metavar="CONNECTION_FILE",
        help="attach to a running rlm kernel (default: the newest connection file)",
    )
    mcp.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1 instead of stdio")
    mcp.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765; 0 picks a free one)")
    mcp.add_argument("--token", default=None, help="HTTP bearer token (default: $RLM_MCP_TOKEN or a new one)")
    mcp.add_argument("--cwd", default=None, help="working directory of the kernel it starts (default: here)")
    return mcp


async def serve(args: argparse.Namespace) -> None:
    try:
        import mcp  # noqa: F401 - the SDK comes with the [mcp] extra
    except ImportError:
        raise SystemExit("rlm-kernel mcp needs the MCP SDK: pip install -e '.[mcp]'") from None
    from rlm_kernel.mcp.kernel_link import KernelLink
    from rlm_kernel.mcp.server import build_server

    if args.existing is not None:
        link = await KernelLink.attach(args.existing or None)
    else:
        link = await KernelLink.start(cwd=args.cwd or os.getcwd())
    try:
        server = build_server(link)
        if not args.http:
            await server.run_stdio_async()
            return
        await _serve_http(server, args)
    finally:
        await link.close()


async def _serve_http(server: object, args: argparse.Namespace) -> None:
    import uvicorn

    token = args.token or os.environ.get("RLM_MCP_TOKEN") or new_token()
    app = BearerToken(server.streamable_http_app(), token)  # type: ignore[attr-defined]
    config = uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    web.config.setup_event_loop = lambda: None  # type: ignore[method-assign]

    async def announce() -> None:
        while not web.started:
            await asyncio.sleep(0.05)
        port = web.servers[0].sockets[0].getsockname()[1]
        print(f"rlm-kernel MCP server: http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        print(f"bearer token: {token}", file=sys.stderr, flush=True)

    await asyncio.gather(web.serve(), announce())


def main(args: argparse.Namespace) -> int:
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        return 0
    except Exception as exc:  # noqa: BLE001 - one line for the person, not a traceback
        print(f"rlm-kernel mcp: {exc}", file=sys.stderr)
        return 1
    return 0


def run(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="rlm-kernel")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return main(parser.parse_args(["mcp", *argv]))
