"""What an MCP client sees: descriptions written for MCP (parameters as the client names
them, errors as tool errors), read from the server in this process (``make_srv``, the
same server ``marm mcp`` builds), and `-` with no special meaning over a real STDIO
session (it never makes the server read its stdin, which is the protocol)."""

from __future__ import annotations

import re

import pytest

from tests.helpers import git_init
from tests.mcp.test_mcp_stdio import StdioClient

#: CLI wording that means nothing to an MCP client: option spellings, exit codes, pipes,
#: and `marm CMD` command lines (tools are named marm_...).
CLI_WORDING = re.compile(r"--[a-z]|exit code|standard input|stdin|`marm |\bmarm [a-z]", re.IGNORECASE)


def _session(cwd):
    client = StdioClient(cwd)
    client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "pytest-stdio", "version": "0"}})
    client.send({"method": "notifications/initialized"})
    return client


def test_tool_descriptions_carry_no_cli_wording(tmp_path, make_srv):
    tools = [tool.model_dump(by_alias=True) for tool in make_srv(git_init(tmp_path / "proj")).tools()]
    texts = {}
    for tool in tools:
        texts[tool["name"]] = tool["description"]
        for name, prop in tool["inputSchema"].get("properties", {}).items():
            texts[f"{tool['name']}.{name}"] = prop.get("description", "")
    # populated: every tool and every parameter is described, in MCP terms where it matters
    assert len(tools) >= 20 and all(texts.values()), [k for k, v in texts.items() if not v]
    assert "`force` is true" in texts["marm_log_entry"]
    assert "marm_restore" in texts["marm_retract"] and "`as_of`" in texts["marm_supersede"]
    assert "YYYY-MM-DD-topic-summary" in texts["marm_log_entry.text"]
    cli = {k: CLI_WORDING.findall(v) for k, v in texts.items() if CLI_WORDING.search(v)}
    assert cli == {}, cli
    assert not any("Examples:" in tool["description"] for tool in tools)


@pytest.mark.slow
def test_a_lone_dash_is_refused_and_stdin_is_never_read(tmp_path):
    repo = git_init(tmp_path / "proj")
    client = _session(repo)
    try:
        dash = client.call("marm_log_entry", text="-")
        note = client.call("marm_notebook", action="add", name="style", content="-")
        # The session still works: the server did not block on, or consume, its stdin.
        kept = client.call("marm_log_entry", text="DECISION: a dash is not a placeholder over MCP")
        added = client.call("marm_notebook", action="add", name="review", content="read the diff twice")
        summary = client.call("marm_summary")["structuredContent"]
        listed = client.call("marm_notebook", action="list")["structuredContent"]
    finally:
        code, err = client.close()
    assert code == 0, err
    assert dash["isError"] is True
    assert dash["content"][0]["text"] == (
        "error: text: '-' stands for standard input on the command line only; "
        "over MCP pass the text itself")
    assert note["isError"] is True and "content: '-'" in note["content"][0]["text"]
    assert not kept.get("isError") and not added.get("isError")
    assert summary["total"] == 1  # the right memory is stored, the dash is not
    contents = [item["text"] for group in summary["groups"] for item in group["items"]]
    assert contents == ["DECISION: a dash is not a placeholder over MCP"]
    assert [e["name"] for e in listed["entries"]] == ["review"]


def _wire(result) -> dict:
    """A tool result as the client receives it (camelCase keys: isError, structuredContent)."""
    return result.model_dump(by_alias=True)


def test_an_error_names_the_parameter_not_the_option(tmp_path, make_srv):
    srv = make_srv(git_init(tmp_path / "proj"))
    text = "DECISION: the cache lives in redis"
    wrote = _wire(srv.call("marm_log_entry", text=text))["structuredContent"]
    srv.ok("marm_retract", id=wrote["id"], reason="we dropped redis")
    refused = _wire(srv.call("marm_log_entry", text=text))
    forced = _wire(srv.call("marm_log_entry", text=text, force=True))
    bad_limit = _wire(srv.call("marm_smart_recall", query="cache", limit=0))
    message = refused["content"][0]["text"]
    assert refused["isError"] is True and "retracted" in message
    assert "pass `force` to store it anyway" in message and "--" not in message, message
    assert not forced.get("isError") and forced["structuredContent"]["created"] is True
    assert bad_limit["content"][0]["text"] == "error: `limit` must be at least 1"


def test_an_error_suggests_the_tool_not_the_shell_command(tmp_path, make_srv):
    srv = make_srv(git_init(tmp_path / "proj"))
    kept = _wire(srv.call("marm_log_entry", text="DECISION: invoices are numbered per year"))
    gone = _wire(srv.call("marm_log_entry", text="DECISION: the cache lives in redis"))["structuredContent"]
    srv.ok("marm_retract", id=gone["id"], reason="we dropped redis")
    refused = _wire(srv.call("marm_doubt", id=gone["id"]))
    doubted = _wire(srv.call("marm_doubt", id=kept["structuredContent"]["id"]))
    message = refused["content"][0]["text"]
    assert refused["isError"] is True and "retracted" in message
    assert f"`marm_restore({gone['id']})`" in message and "`marm " not in message, message
    assert not doubted.get("isError")  # the same tool on an active memory works


def test_cli_spellings_become_tool_calls():
    from marm.mcp_server import _for_mcp, _tools

    tools = _tools()
    assert _for_mcp("memory #3 is retracted; `marm restore 3` it first", {"id"}, tools) == \
        "memory #3 is retracted; `marm_restore(3)` it first"
    assert _for_mcp("pass --force to store it anyway", {"force"}, tools) == "pass `force` to store it anyway"
    assert _for_mcp("run `marm frobnicate 3`", set(), tools) == "run `marm frobnicate 3`"  # no such tool: left
