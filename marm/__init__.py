"""marm: a local-first memory toolkit for coding agents.

Everything lives in one SQLite store per user (see ``marm.store``); every operation is
a typed function in ``marm.ops`` from which the CLI (``marm.cli``) and the MCP server
(``marm.mcp_server``) are generated.
"""

__version__ = "0.1.0"
