"""``marm mcp``: every registered op that has an MCP name, served as an MCP tool over STDIO.

Nothing here is written by hand per tool: each tool function is generated from the op's
one definition (``Op.params()``), the way ``marm/cli.py`` generates Typer commands, so a
tool has the CLI command's parameters (names, types, defaults; their MCP help as
description), the op's help for MCP (``Op.tool_help``: the shared docstring and its MCP
section, no flags, exit codes or examples) as description, honest annotations, the op's
result dataclass as output schema, and the result's ``text()`` as readable content. A
lone ``-`` where the CLI would read a pipe is refused: stdin is the protocol here.

Per call, a fresh ``Ctx(source="mcp")`` whose working directory is the client's first
root (``roots/list``) when the client offers roots, else the directory the server was
started in, so scope is decided per call, never once per process. A ``MarmError`` comes
back as a tool error carrying the line the CLI would print, with the options it names
spelt as the tool's parameters (``--force`` is `force`); anything unexpected does too,
with the traceback on stderr. The server never dies of a bad call.

The process stays up for the whole agent session, so it is the natural place to embed:
after writes, once the client has been quiet for a moment, a bounded drain of ``embed``
tasks runs in a background thread (the encoder loads once per process), off the request
path. A recall right after a write still finds the new memory. That policy, and the
connection held open for the server's life, are ``marm.ops.background``'s; this face
only reports calls and successful writes to them.

The STDIO side (the descriptors, the handshake answered while this module loads, the
signals) is ``marm.mcp_stdio``'s; ``run`` serves the client's stream once the server is
built. This module imports ``mcp`` at the top: only ``marm mcp`` imports it, on a thread.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import os
import re
import threading
import time
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import unquote, urlparse

import anyio
import mcp_types as types
import orjson
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError
from typing_extensions import TypedDict

from marm import __version__
from marm.context import Ctx
from marm.errors import MarmError
from marm.ops import Op, load
from marm.ops.background import BackgroundDrain, DatabaseAnchor

log = logging.getLogger("marm.mcp")

#: Name of the generated tool functions' MCP-context parameter (never a marm parameter).
_MCP_CONTEXT = "mcp_context"
#: How long a tool call waits for the client's roots before using the start directory.
ROOTS_TIMEOUT = 2.0
#: Client names (``clientInfo.name``) mapped to the platform marm tags memories with.
_PLATFORMS = ("claude", "codex", "gemini", "cursor")


def tool_ops() -> list[Op]:
    """The ops served as tools: every registered op with an MCP name."""
    return [o for o in load().values() if o.mcp]


@dataclass
class Served:
    """What the tools share: where the server started, its environment, its counters."""

    cwd: Path
    env: Mapping[str, str] = field(repr=False)
    background: BackgroundDrain = field(repr=False)
    calls: int = 0
    errors: int = 0
    started: float = field(default_factory=time.monotonic)
    roots_failed: bool = False
    _anchor: DatabaseAnchor = field(default_factory=DatabaseAnchor, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    async def ctx_for(self, mcp_context: Context | None) -> Ctx:
        """A fresh context for one tool call: the client's root (or the start dir), its name."""
        root, platform = None, None
        if mcp_context is not None:
            root = await self._client_root(mcp_context)
            platform = _platform(mcp_context)
        return Ctx(source="mcp", platform=platform, cwd=root or self.cwd, env=dict(self.env))

    async def _client_root(self, mcp_context: Context) -> Path | None:
        """The client's first ``file://`` root that is a directory, if the client offers roots.

        Asked on every call, so a client that changes its roots is followed. A client
        that offers roots but fails to list them is not asked again: every later call
        would wait for it.
        """
        session = mcp_context.session
        capabilities = session.client_capabilities
        if (self.roots_failed or capabilities is None or capabilities.roots is None
                or not session.can_send_request):
            return None  # no roots, or a protocol version without server-to-client requests
        try:
            with anyio.fail_after(ROOTS_TIMEOUT):
                listed = await session.send_request(types.ListRootsRequest(), types.ListRootsResult)
        except Exception as exc:  # noqa: BLE001 - without roots the start directory is used
            self.roots_failed = True
            log.warning("the client's roots/list failed (%s); using %s for scope", exc, self.cwd)
            return None
        for root in listed.roots:
            uri = urlparse(str(root.uri))
            if uri.scheme == "file":
                path = Path(unquote(uri.path))
                if path.is_dir():
                    return path
        return None

    def invoke(self, o: Op, ctx: Ctx, kwargs: dict[str, Any]) -> types.CallToolResult:
        """Run ``o`` (in a worker thread) and turn its result or error into a tool result."""
        self.background.touch()
        try:
            self._anchor.hold(ctx)
            result = o.func(ctx, **kwargs)
            answer = types.CallToolResult(
                content=[types.TextContent(type="text", text=result.text())],
                structured_content=_as_json(result),
            )
        except MarmError as exc:
            answer = _error(f"error: {_for_mcp(exc.message, {spec.name for spec in o.params()}, _tools())}")
        except Exception as exc:  # noqa: BLE001 - one bad call must not end the session
            log.exception("tool %s failed", o.mcp)
            answer = _error(f"error: internal error: {type(exc).__name__}: {exc}")
        finally:
            ctx.close()
        with self._lock:
            self.calls += 1
            self.errors += bool(answer.is_error)
        if not o.read_only and not answer.is_error:
            self.background.kick()
        return answer

    def close(self) -> None:
        self._anchor.close()


def _as_json(result: Any) -> dict[str, Any]:
    """The result as the CLI's ``--json`` prints it (same keys, same values)."""
    return orjson.loads(orjson.dumps(result, option=orjson.OPT_NON_STR_KEYS))


#: An option as an op's error message spells it for the CLI (``--valid-from``).
_OPTION = re.compile(r"--([a-z][a-z0-9-]*)")
#: A command an op's error message suggests, as typed in a shell (`marm restore 3`).
_COMMAND = re.compile(r"`marm ([a-z][a-z-]*(?: [a-z][a-z-]*)?)((?: [^`]+)?)`")


def _tools() -> dict[str, str]:
    """CLI command -> MCP tool name, for every op served as a tool."""
    return {" ".join(o.path): o.mcp for o in tool_ops() if o.mcp}


def _for_mcp(message: str, names: set[str], tools: Mapping[str, str]) -> str:
    """An op's error as an MCP client reads it: an option the message names (``pass
    --force``) becomes the tool's parameter (``pass `force```), and a command it suggests
    (`marm restore 3`) the tool's call (`marm_restore(3)`). Ops word their errors once,
    for both surfaces; only these spellings differ."""
    def parameter(match: re.Match[str]) -> str:
        name = match.group(1).replace("-", "_")
        found = next((n for n in (name, f"{name}_") if n in names), None)
        return f"`{found}`" if found else match.group(0)

    def command(match: re.Match[str]) -> str:
        words, args = match.group(1), match.group(2).strip()
        tool = tools.get(words) or tools.get(words.split(" ")[0])
        if tool is None:
            return match.group(0)
        if tool != tools.get(words):  # one word named the command; the rest are its arguments
            args = f"{words.split(' ', 1)[1]} {args}".strip()
        given = [f"{a[2:].replace('-', '_')}=true" if a.startswith("--") else a for a in args.split()]
        return f"`{tool}({', '.join(given)})`"

    return _OPTION.sub(parameter, _COMMAND.sub(command, message))


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                is_error=True)


def _platform(mcp_context: Context) -> str | None:
    params = mcp_context.session.client_params
    name = params.client_info.name if params is not None and params.client_info else None
    if not name:
        return None
    lowered = name.lower()
    return next((p for p in _PLATFORMS if p in lowered), name)


def _lone_dash(name: str) -> types.CallToolResult:
    """The answer to ``-`` where the CLI would read a pipe. Over MCP the server's stdin is
    the protocol itself, so it is never read; storing "-" would keep a client's mistake
    (it copied the CLI's convention), so the call is refused and says why."""
    return _error(f"error: {name}: '-' stands for standard input on the command line only; "
                  f"over MCP pass the {name} itself")


def _annotations(o: Op) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        read_only_hint=o.read_only,
        destructive_hint=o.destructive and not o.read_only,
        idempotent_hint=o.idempotent,
        open_world_hint=False,
    )


@functools.cache
def _output_type(cls: type) -> type:
    """A TypedDict with the fields of an op's result dataclass: the tool's output schema.

    The SDK would derive a model from the dataclass through its class attributes, which
    slotted dataclasses do not have; a TypedDict it takes as it is, in one schema pass
    (this runs for every tool at every start). Every key is always present in a result.
    """
    hints = typing.get_type_hints(cls)
    return TypedDict(cls.__name__, {f.name: hints[f.name] for f in dataclasses.fields(cls)})  # type: ignore[operator]


def _tool_function(o: Op, served: Served) -> Callable[..., Any]:
    """An async function with ``o``'s parameters as pydantic sees them, plus the MCP context."""
    params, hints = [], {}
    for spec in o.params():
        annotation = Annotated[spec.annotation, Field(description=spec.meta.tool_help)]  # type: ignore[name-defined]  # built at run time
        params.append(inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY,
                                        default=spec.default, annotation=annotation))
        hints[spec.name] = annotation
    params.append(inspect.Parameter(_MCP_CONTEXT, inspect.Parameter.KEYWORD_ONLY,
                                    default=None, annotation=Context))
    hints[_MCP_CONTEXT] = Context
    # The op's dataclass is the output schema; the function builds the result itself.
    returns = Annotated[types.CallToolResult, _output_type(o.return_type())]
    hints["return"] = returns
    piped = [spec.name for spec in o.params() if spec.meta.stdin]

    async def tool(**kwargs: Any) -> types.CallToolResult:
        lone = next((name for name in piped if kwargs.get(name) == "-"), None)
        if lone is not None:
            return _lone_dash(lone)
        ctx = await served.ctx_for(kwargs.pop(_MCP_CONTEXT, None))
        return await anyio.to_thread.run_sync(served.invoke, o, ctx, kwargs)

    tool.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
    tool.__annotations__ = hints
    tool.__name__ = tool.__qualname__ = o.mcp or o.path[-1]
    tool.__doc__ = o.tool_help
    return tool


class _Server(MCPServer):
    """The SDK's server, with argument errors told in one line like every other error."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_bad_arguments(exc.__cause__)) from exc.__cause__
            raise


def _bad_arguments(exc: ValidationError) -> str:
    problems = [
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors(include_url=False)
    ]
    return "error: " + "; ".join(problems)


def build(
    cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[MCPServer, Served]:
    """The MCP server for the current registry, and the state its tools share."""
    start = Path(cwd) if cwd is not None else Path.cwd()
    environ = dict(env if env is not None else os.environ)
    served = Served(start, environ, BackgroundDrain(start, environ))
    server = _Server(
        name="marm", title="marm", version=__version__,
        description="Local-first memory for coding agents: one SQLite store, exact and "
                    "semantic recall.",
        log_level=_log_level(environ),
    )
    for o in tool_ops():
        server.add_tool(
            _tool_function(o, served), name=o.mcp, title=f"marm {o.name}", description=o.tool_help,
            annotations=_annotations(o), structured_output=True,
        )
    return server, served


def _log_level(env: Mapping[str, str]) -> typing.Literal["DEBUG", "WARNING"]:
    return "DEBUG" if env.get("MARM_DEBUG") else "WARNING"


def run(server: MCPServer, stdin: Any, stdout: Any) -> None:
    """Serve one client with the SDK until its stream ends: ``stdin`` yields its lines
    (``async for``), ``stdout`` takes the answers (``await write``, ``flush``), as the
    SDK's STDIO transport reads and writes them (``marm.mcp_stdio``)."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on our streams
        async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(main)
