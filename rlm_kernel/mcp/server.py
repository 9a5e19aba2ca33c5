"""The MCP tools and resources over one `rlm` kernel (`build_server(link)`), written for a model to read.

Every tool runs one cell: `run_cell` the agent's code as model-written code; the others a cell this server
writes with the agent's values as data (`cells.py`). A refused or failing cell is an MCP tool error whose
text is the kernel's own message (which rule refused it, what to do)."""

from __future__ import annotations

import ast
import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ImageContent, TextContent

from rlm_kernel import __version__
from rlm_kernel.mcp import cells
from rlm_kernel.mcp.kernel_link import CellResult, KernelLink

__all__ = ["INSTRUCTIONS", "build_server"]

INSTRUCTIONS = """\
A sandboxed Recursive Language Model (RLM) REPL: a live Jupyter kernel whose variable `context` holds a large
text (a corpus of files joined with `=== path ===` markers; `context_files` maps each path to (start, end)).
Load text with `load_context`, look at it with code in `run_cell` (slicing, `re`, `find_relevant(context,
query)`, `extract_functions`), ask a child model about a piece with `llm_query(prompt)` inside your code, or
hand a whole question to `rlm`, which runs the RLM loop (a root model writing REPL code turn by turn) and
returns an answer drawn from the context. Every cell runs under a policy (no files, processes, network or
private attributes) and a budget; a person may share this kernel from a notebook and sees what you define."""

_RUN_CELL = """Run Python code in the sandboxed REPL, as one notebook cell, and return its output.

The namespace persists between calls and is shared with the notebook. Preloaded: `context` (str),
`context_files`, `llm_query(prompt)`, `llm_query_batched(prompts)`, `rlm_query(task)`, `find_relevant(text,
query, top_k=5)`, `map_reduce(text, map_prompt, reduce_prompt)`, `extract_functions(text, language)`,
`SHOW_VARS()`. Print what you want to see; outputs are capped. Your code runs as model-written code: it may
not change kernel settings, run magics or read secret files, and functions you define stay untrusted."""


def _blocks(result: CellResult) -> list[TextContent | ImageContent]:
    import base64

    blocks: list[TextContent | ImageContent] = [TextContent(type="text", text=result.text() or "(no output)")]
    for mime, data in result.images[:4]:
        blocks.append(ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime))
    return blocks


def _checked(result: CellResult) -> CellResult:
    if not result.ok:
        raise ToolError(result.text() or result.error or "the cell failed")
    return result


def _literal(result: CellResult) -> Any:
    """The Python literal a server-authored cell printed (parsed with `ast.literal_eval`, never evaluated)."""
    _checked(result)
    try:
        return ast.literal_eval(result.stdout.strip().splitlines()[-1])
    except (ValueError, SyntaxError, IndexError):
        raise ToolError(f"the kernel's report could not be read: {result.stdout[-500:]!r}") from None


def build_server(link: KernelLink) -> MCPServer:
    """The MCP server for `link`'s kernel."""
    server = MCPServer("rlm-kernel", instructions=INSTRUCTIONS, version=__version__)

    async def run(code: str, ctx: Context | None, *, agent: bool) -> CellResult:
        sent = 0

        async def progress(message: str) -> None:
            nonlocal sent
            sent += 1
            if ctx is not None:
                await ctx.report_progress(sent, None, message)

        return await link.execute(code, agent=agent, on_output=progress)

    @server.tool(description=_RUN_CELL)
    async def run_cell(code: str, ctx: Context) -> list[TextContent | ImageContent]:
        if type(code) is not str or not code.strip():
            raise ToolError("code must be a non-empty string of Python")
        return _blocks(_checked(await run(code, ctx, agent=True)))

    @server.tool()
    async def load_context(source: str, ctx: Context, append: bool = False) -> str:
        """Load text into `context`: a file, a directory or a glob, relative to the kernel's working directory
        and inside its allowed roots. `append=True` adds to what is loaded. Returns the load summary (files,
        characters, anything skipped and why)."""
        return _checked(await run(_arg(cells.load_context, source, append), ctx, agent=True)).text()

    @server.tool()
    async def rlm(
        question: str,
        ctx: Context,
        max_iterations: int = 12,
        budget_usd: float | None = None,
        cite: bool = False,
    ) -> dict[str, Any]:
        """Answer a question about `context` with the RLM loop: a root model writes REPL code turn by turn,
        asks child models about pieces, and ends with an answer the kernel checks was drawn from the context.
        Returns the answer, how the run ended (`termination`: final, max_iterations, budget, ...), cost and a
        short trajectory. Progress is reported per turn. `budget_usd` caps this run (within the session's
        budget); `cite=True` asks for citations the kernel verifies against the context."""
        code = _arg(cells.rlm, question, max_iterations, budget_usd, cite)
        return _literal(await run(code, ctx, agent=False))

    @server.tool()
    async def variables(ctx: Context) -> str:
        """List the notebook's variables (names, types, sizes), the agent's and the person's."""
        return _checked(await run(cells.variables(), ctx, agent=False)).text()

    @server.tool()
    async def get_variable(name: str, ctx: Context, max_chars: int = 4000) -> str:
        """The repr of one notebook variable, cut to `max_chars`."""
        return _checked(await run(_arg(cells.get_variable, name, max_chars), ctx, agent=False)).text()

    @server.tool()
    async def budget(ctx: Context) -> str:
        """The session's budget: calls, tokens and USD spent against their caps."""
        return _checked(await run(cells.budget(), ctx, agent=False)).text()

    @server.resource("rlm://context", mime_type="text/plain", description="What `context` holds: its files")
    async def context_resource() -> str:
        return _resource(await link.execute(cells.context_summary(), agent=False)).text()

    @server.resource(
        "rlm://run/last.jsonl",
        mime_type="application/jsonl",
        description="The last `rlm` run as JSON lines: a header, then one record per turn",
    )
    async def last_run_jsonl() -> str:
        printed = _resource(await link.execute(cells.trajectory_records(), agent=False)).stdout
        records = ast.literal_eval(printed)
        return "\n".join(json.dumps(r, default=str) for r in records) + "\n"

    @server.resource(
        "rlm://run/last.html",
        mime_type="text/html",
        description="The last `rlm` run as the kernel's trajectory viewer (HTML)",
    )
    async def last_run_html() -> str:
        html = _resource(await link.execute(cells.trajectory_html(), agent=False)).html
        if html is None:
            raise ResourceError("the last run has no HTML view")
        return html

    return server


def _arg(build: Any, *args: Any) -> str:
    try:
        return build(*args)
    except cells.ArgumentRefused as exc:
        raise ToolError(str(exc)) from None


def _resource(result: CellResult) -> CellResult:
    if not result.ok:
        text = result.text()
        if cells.RESULT in text and "NameError" in text:
            raise ResourceError("no `rlm` run yet: call the rlm tool first")
        raise ResourceError(text or "the kernel could not produce it")
    return result
