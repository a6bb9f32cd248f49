"""Serving ops: ``marm mcp`` (CLI only: it is the server, not one of its tools)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from marm.context import Ctx
from marm.ops.registry import op


@dataclass(frozen=True, slots=True)
class ServeResult:
    calls: int
    errors: int
    seconds: float

    def text(self) -> str:
        return (f"marm mcp: served {self.calls} tool call(s), {self.errors} error(s),"
                f" in {self.seconds:.0f}s")


@op("mcp")
def mcp(ctx: Ctx) -> ServeResult:
    """Serve marm's operations as MCP tools over STDIO, until the client disconnects.

    Register it with an agent once, e.g. `claude mcp add marm -- marm mcp`. Each tool
    call is scoped to the client's root (or the directory the server started in);
    memories are embedded in the background while the server runs. Standard output
    carries only protocol messages; logs and this command's summary go to stderr.

    Examples:
      marm mcp
      MARM_DEBUG=1 marm mcp
    """
    import time

    from marm import embed, mcp_stdio  # start-up cost: the MCP SDK loads only for `marm mcp`

    started = time.monotonic()
    embed.expect_bulk()  # a whole session of recalls and background embedding
    served = mcp_stdio.serve(ctx.cwd, ctx.env, ctx.home)
    # The protocol is over: point stdout at stderr so the summary the CLI prints for
    # this command can never reach a client still reading our stdout.
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    if served is None:  # the client left before the server was up
        return ServeResult(0, 0, round(time.monotonic() - started, 3))
    return ServeResult(served.calls, served.errors, round(time.monotonic() - served.started, 3))
