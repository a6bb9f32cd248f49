"""Fixtures for the MCP tests: the real server built from the registry, and a client."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client

from marm.mcp_server import build


class Calls:
    """Run tool calls against one in-process server (each ``call`` is one client session)."""

    def __init__(self, cwd: Path, roots: list[Path] | None = None,
                 client_name: str = "pytest") -> None:
        self.server, self.served = build(cwd, dict(os.environ))
        self.roots = roots
        self.client_name = client_name

    def client(self) -> Client:
        async def list_roots(_context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(
                roots=[types.Root(uri=p.as_uri(), name=p.name) for p in self.roots or []])

        return Client(
            self.server, raise_exceptions=True,
            # roots/list is a server-to-client request: the handshake protocol carries it.
            mode="legacy" if self.roots is not None else "auto",
            list_roots_callback=list_roots if self.roots is not None else None,
            client_info=types.Implementation(name=self.client_name, version="1"),
        )

    def session(self, body: Callable[[Client], Any]) -> Any:
        async def run() -> Any:
            async with self.client() as c:
                return await body(c)

        return asyncio.run(run())

    def call(self, tool: str, /, **arguments: Any) -> types.CallToolResult:
        return self.session(lambda c: c.call_tool(tool, arguments))

    def ok(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        """Call a tool that must succeed; its structured result."""
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    @staticmethod
    def text(result: types.CallToolResult) -> str:
        return "\n".join(c.text for c in result.content if c.type == "text")

    def tools(self) -> list[types.Tool]:
        return self.session(lambda c: c.list_tools()).tools

    def drain_idle(self) -> None:
        """Run the background drain the writes asked for now, and wait for it."""
        self.served.background.finish(timeout=30)

    def close(self) -> None:
        self.served.background.finish(timeout=30, run_pending=False)
        self.served.close()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "started"
    path.mkdir()
    return path


@pytest.fixture
def srv(work: Path) -> Iterator[Calls]:
    """A server started in a scratch directory outside any git repository."""
    calls = Calls(work)
    yield calls
    calls.close()


@pytest.fixture
def make_srv() -> Iterator[Callable[..., Calls]]:
    """Build a server with given start directory, client roots and client name."""
    made: list[Calls] = []

    def make(cwd: Path, roots: list[Path] | None = None, client_name: str = "pytest") -> Calls:
        made.append(Calls(cwd, roots, client_name))
        return made[-1]

    yield make
    for calls in made:
        calls.close()
