"""The real server in a subprocess over STDIO: `python -m marm mcp`, driven line by line."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git_init


class StdioClient:
    """A minimal newline-delimited JSON-RPC client that keeps every raw stdout line."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "marm", "mcp"], cwd=cwd, env=dict(os.environ),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.lines: list[bytes] = []
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            try:
                self.inbox.put(json.loads(line))
            except ValueError:
                pass  # kept in self.lines; the test fails on it
        self.inbox.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, **({"params": params} if params else {})})
        while True:
            message = self.inbox.get(timeout=60)
            assert message is not None, "the server closed stdout"
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message["result"]

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def stop(self, how: str) -> tuple[int, float]:
        """Tell the server to stop as a client does (``eof``: close its input; ``sigint``
        or ``sigterm``: that signal); its exit code and the seconds it took."""
        import signal
        import time

        start = time.monotonic()
        if how == "eof":
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        else:
            self.proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGTERM)
        code = self.proc.wait(timeout=10)
        return code, time.monotonic() - start

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read().decode("utf-8", "replace")


@pytest.mark.slow
def test_stdio_session_end_to_end(tmp_path):
    repo = git_init(tmp_path / "proj")
    client = StdioClient(repo)
    try:
        init = client.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "codex-mcp-client", "version": "0"},
        })
        assert init["serverInfo"]["name"] == "marm"
        client.send({"method": "notifications/initialized"})

        tools = {t["name"]: t for t in client.request("tools/list")["tools"]}
        assert {"marm_log_entry", "marm_smart_recall", "marm_delete"} <= set(tools)
        assert tools["marm_delete"]["annotations"]["destructiveHint"] is True
        assert "outputSchema" in tools["marm_smart_recall"]

        gone = client.call("marm_log_entry", text="DECISION: retry the payment webhook three times")
        kept = client.call("marm_log_entry",
                           text="DECISION: retry the payment webhook three times, then alert")
        gone_id, kept_id = gone["structuredContent"]["id"], kept["structuredContent"]["id"]
        assert gone["structuredContent"]["project"] == str(repo)

        found = client.call("marm_smart_recall", query="payment webhook retry")
        ids = [r["id"] for r in found["structuredContent"]["results"]]
        assert gone_id in ids and kept_id in ids
        assert found["content"][0]["type"] == "text"
        assert f"#{gone_id}" in found["content"][0]["text"]
        assert found["structuredContent"]["results"][0]["platform"] == "codex"

        deleted = client.call("marm_delete", type="memory", target=str(gone_id))
        assert not deleted.get("isError") and deleted["structuredContent"]["deleted"] is True
        after = client.call("marm_smart_recall", query="payment webhook retry")
        ids = [r["id"] for r in after["structuredContent"]["results"]]
        assert ids == [kept_id]

        bad = client.call("marm_show", id=gone_id)
        assert bad["isError"] is True
        assert bad["content"][0]["text"] == f"error: no memory with id {gone_id}"
        assert client.call("marm_summary")["structuredContent"]["total"] == 1
    finally:
        code, err = client.close()
    assert code == 0, err
    assert client.lines, "no protocol output at all"
    for line in client.lines:
        message = json.loads(line)  # every stdout line is one JSON-RPC message
        assert message["jsonrpc"] == "2.0" and ("id" in message or "method" in message), line
    assert "served 7 tool call(s), 1 error(s)" in err or '"calls":7' in err, err


@pytest.mark.slow
@pytest.mark.parametrize("how", ["eof", "sigint", "sigterm"])
def test_the_server_exits_at_once_and_leaves_queued_work_queued(tmp_path, how):
    repo = git_init(tmp_path / "proj")
    client = StdioClient(repo)
    client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "claude-code", "version": "0"}})
    client.send({"method": "notifications/initialized"})
    wrote = client.call("marm_log_entry", text="DECISION: the server stops when told")
    assert not wrote.get("isError")
    _, seconds = client.stop(how)
    print(f"{how}: exited in {seconds * 1000:.0f} ms")
    assert seconds < 0.1, f"{how}: {seconds:.3f}s"
    status = subprocess.run([sys.executable, "-m", "marm", "status", "--json"], cwd=repo,
                            capture_output=True, text=True, env=dict(os.environ))
    backlog = json.loads(status.stdout)
    assert backlog["memories"]["total"] == 1
    assert backlog["outbox"]["embed"]["pending"] == 1, backlog["outbox"]  # still queued, not lost
