"""`marm mcp` answers the handshake from the SDK's saved answers while the SDK loads.

The first start of a home lets the SDK answer and saves what it said; the next start
gives the client the same answers before the SDK is up, and the SDK's session still
sees the client's initialize (its name tags memories). A saved file from other code is
ignored.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from marm.mcp_stdio import Handshake, cache_path
from tests.helpers import git_init
from tests.mcp.test_mcp_stdio import StdioClient

INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "codex-mcp-client", "version": "0"}}


def _handshake(client: StdioClient, init: dict[str, Any] = INIT) -> tuple[dict[str, Any], dict[str, Any]]:
    answer = client.request("initialize", init)
    client.send({"method": "notifications/initialized"})
    return answer, client.request("tools/list")


def _ids(client: StdioClient) -> list[Any]:
    return [json.loads(line).get("id") for line in client.lines if "id" in json.loads(line)]


@pytest.mark.slow
def test_the_second_start_answers_as_the_sdk_did_and_serves_the_same_session(tmp_path):
    home = Path(os.environ["MARM_HOME"])
    repo = git_init(tmp_path / "proj")
    first = StdioClient(repo)
    try:
        sdk_init, sdk_tools = _handshake(first)
    finally:
        code, err = first.close()
    assert code == 0, err
    assert cache_path(home).is_file()
    assert {t["name"] for t in sdk_tools["tools"]} >= {"marm_log_entry", "marm_smart_recall"}

    second = StdioClient(repo)
    try:
        init, tools = _handshake(second)
        assert (init, tools) == (sdk_init, sdk_tools)
        wrote = second.call("marm_log_entry", text="DECISION: the handshake comes from the saved answers")
        assert not wrote.get("isError"), wrote
        found = second.call("marm_smart_recall", query="handshake saved answers")
        [hit] = [r for r in found["structuredContent"]["results"] if r["id"] == wrote["structuredContent"]["id"]]
        assert hit["platform"] == "codex"  # the SDK's session got the client's initialize
        other = second.request("tools/list")  # once the SDK is up, it answers the same
        assert other == sdk_tools
    finally:
        code, err = second.close()
    assert code == 0, err
    ids = _ids(second)
    assert ids == sorted(set(ids)) == [1, 2, 3, 4, 5], ids  # one answer per request, no echo of the SDK's


@pytest.mark.slow
def test_a_saved_file_from_other_code_is_not_used(tmp_path):
    home = Path(os.environ["MARM_HOME"])
    path = cache_path(home)
    path.parent.mkdir(parents=True)
    bogus = {"tools": [{"name": "not_a_marm_tool", "inputSchema": {"type": "object"}}]}
    path.write_bytes(orjson.dumps({"key": "other code", "initialize": {"2025-06-18": {"protocolVersion": "2025-06-18"}},
                                   "tools/list": {"2025-06-18": bogus}}))
    client = StdioClient(git_init(tmp_path / "proj"))
    try:
        init, tools = _handshake(client)
    finally:
        code, err = client.close()
    assert code == 0, err
    names = {t["name"] for t in tools["tools"]}
    assert "marm_smart_recall" in names and "not_a_marm_tool" not in names
    assert init["serverInfo"]["name"] == "marm"
    saved = orjson.loads(path.read_bytes())
    assert saved["key"] != "other code" and saved["tools/list"]["2025-06-18"] == tools


def _request(mid: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": mid, "method": method, **({"params": params} if params else {})})


def _answer(mid: Any, result: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": mid, "result": result})


def test_the_handshake_answers_only_what_the_sdk_said_before(tmp_path):
    init_result = {"protocolVersion": "2025-06-18", "serverInfo": {"name": "marm"}}
    tools_result = {"tools": [{"name": "marm_log_entry"}]}
    fresh = Handshake(tmp_path)
    assert fresh.answer(_request(1, "initialize", INIT)) == (None, True)  # nothing saved: the SDK answers
    assert fresh.answer(_request(2, "tools/list")) == (None, True)
    assert fresh.passes(_answer(1, init_result)) and fresh.passes(_answer(2, tools_result))
    assert fresh.complete

    again = Handshake(tmp_path)
    reply, forward = again.answer(_request("a", "initialize", INIT))
    assert forward and orjson.loads(reply or b"") == {"jsonrpc": "2.0", "id": "a", "result": init_result}
    reply, forward = again.answer(_request(7, "tools/list"))
    assert not forward and orjson.loads(reply or b"")["result"] == tools_result
    assert again.answer(_request(8, "tools/list", {"cursor": "next"})) == (None, True)  # a page: the SDK's
    assert again.answer(_request(9, "tools/call", {"name": "marm_status"})) == (None, True)
    assert not again.passes(_answer("a", init_result))  # the SDK's answer to the replayed initialize
    assert again.passes(_answer("a", init_result))      # a later request that reused the id is answered
    assert again.passes(_answer(9, {"content": []}))

    other = Handshake(tmp_path)
    asked = {**INIT, "protocolVersion": "2024-11-05"}
    assert other.answer(_request(1, "initialize", asked)) == (None, True)  # a version the SDK was not asked
    assert other.answer(_request(2, "tools/list")) == (None, True)


def test_answering_the_handshake_imports_no_sdk(tmp_path):
    code = (f"import sys; from pathlib import Path; import marm.mcp_stdio as s; "
            f"h = s.Handshake(Path({str(tmp_path)!r})); h.answer(b'{{}}'); "
            f"print(sorted(m for m in ('mcp', 'mcp_types', 'pydantic', 'anyio') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out


@pytest.mark.slow
@pytest.mark.parametrize("how", ["eof", "sigint", "sigterm"])
def test_the_server_stops_at_once_while_the_sdk_still_loads(tmp_path, how):
    repo = git_init(tmp_path / "proj")
    first = StdioClient(repo)
    _handshake(first)  # saves the answers
    first.close()
    client = StdioClient(repo)
    client.request("initialize", INIT)  # answered from the saved answers, the SDK still loading
    code, seconds = client.stop(how)
    assert seconds < 0.1, f"{how}: {seconds:.3f}s"
    assert code == {"eof": 0, "sigint": 130, "sigterm": 143}[how]
