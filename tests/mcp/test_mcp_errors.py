"""Errors come back as tool errors with the CLI's one-line message; the server lives on."""

from __future__ import annotations


def _error_line(srv, tool, **arguments) -> str:
    result = srv.call(tool, **arguments)
    assert result.is_error, result.content
    text = srv.text(result)
    assert "\n" not in text
    return text


def test_marm_errors_read_like_the_cli(srv, marm, work):
    srv.ok("marm_log_entry", text="a memory so the store is not empty")
    assert _error_line(srv, "marm_show", id=4242) == "error: no memory with id 4242"
    cli = marm("show", "4242", cwd=work)
    assert cli.code == 3 and cli.err.strip() == "error: no memory with id 4242"
    line = _error_line(srv, "marm_delete", type="memory", target="abc")
    assert line == "error: memory ids are numbers, not 'abc'"
    assert _error_line(srv, "marm_smart_recall", query="   ") == "error: the query is empty"
    private_only = _error_line(srv, "marm_log_entry", text="<private>only secret</private>")
    assert private_only.startswith("error: ")


def test_deleting_a_session_needs_yes(srv):
    srv.ok("marm_log_entry", text="kept in session s", session="s")
    line = _error_line(srv, "marm_delete", type="session", target="s")
    assert line.startswith("error: deleting session 's' deletes its 1 memories")
    assert srv.ok("marm_summary")["total"] == 1
    assert srv.ok("marm_delete", type="session", target="s", yes=True)["memories_deleted"] == 1


def test_bad_arguments_are_one_line_tool_errors(srv):
    assert _error_line(srv, "marm_smart_recall", query="x", limit="z").startswith("error: limit: ")
    assert _error_line(srv, "marm_smart_recall").startswith("error: query: ")
    assert _error_line(srv, "marm_delete", type="universe", target="1").startswith("error: type: ")
    assert _error_line(srv, "marm_smart_recall", query="x", detail=9).startswith("error: detail: ")


def test_every_tool_reports_a_missing_argument_cleanly(srv):
    checked = []
    for tool in srv.tools():
        if tool.input_schema.get("required"):
            result = srv.call(tool.name)
            assert result.is_error and srv.text(result).startswith("error: "), tool.name
            checked.append(tool.name)
    assert {"marm_log_entry", "marm_smart_recall", "marm_show", "marm_delete"} <= set(checked)


def test_unknown_tool_is_an_error_not_a_crash(srv):
    result = srv.call("marm_no_such_tool")
    assert result.is_error
    assert srv.ok("marm_log_entry", text="still serving")["created"] is True


def test_an_unexpected_failure_is_one_line_and_the_server_goes_on(srv, monkeypatch):
    from marm.store import events

    def broken(store, entity, entity_id):
        raise RuntimeError("disk on fire")

    stored = srv.ok("marm_log_entry", text="shown with its history")
    monkeypatch.setattr(events, "for_entity", broken)
    line = _error_line(srv, "marm_show", id=stored["id"])
    assert line == "error: internal error: RuntimeError: disk on fire"
    assert srv.ok("marm_log_entry", text="the server survived")["created"] is True
    assert srv.served.errors == 1


def test_only_writes_kick_the_background_drain(srv, monkeypatch):
    kicked = []
    monkeypatch.setattr(srv.served.background, "kick", lambda: kicked.append(1))
    srv.ok("marm_smart_recall", query="anything at all")
    srv.ok("marm_summary")
    assert kicked == []
    srv.ok("marm_log_entry", text="a write")
    assert kicked == [1]
