"""marm: a local-first memory toolkit for coding agents.

Everything lives in one SQLite store per user (see ``marm.store``); every operation is
a typed function in ``marm.ops`` from which the CLI (``marm.cli``) and the MCP server
(``marm.mcp_server``) are generated.
"""

import os

__version__ = "0.1.0"

# Nothing is written outside MARM_HOME: onnxruntime (loaded by the drain and by a
# hybrid recall) otherwise creates a device id and a telemetry database under
# ``$HOME/.cache/Microsoft/DeveloperTools`` in every process that imports it. Set here,
# before any part can import it, and inherited by the drains marm starts.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
