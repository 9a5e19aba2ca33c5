"""`rlm-kernel mcp`: the sandboxed `rlm` kernel as a Model Context Protocol server for agents.

The server talks to one `rlm` kernel through jupyter_client — its own, or one a person already has open
(`--existing`), so both share a namespace and a budget. Code an agent sends runs as model-written code;
the server's own cells take the agent's values only as data (`cells.py`).
"""

__all__: list[str] = []
