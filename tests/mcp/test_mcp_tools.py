"""Each core tool, called in-process through a real MCP client against the real server."""

from __future__ import annotations

import asyncio

from tests.helpers import git_init


def test_log_entry_then_smart_recall(srv):
    logged = srv.ok("marm_log_entry", text="DECISION: use idempotency keys on the payment webhook")
    other = srv.ok("marm_log_entry", text="the build uses ninja")
    assert logged["created"] is True and logged["kind"] == "decision"
    found = srv.call("marm_smart_recall", query="payment webhook")
    data = found.structured_content
    ids = [r["id"] for r in data["results"]]
    assert ids[0] == logged["id"]
    assert other["id"] not in [r["id"] for r in srv.ok("marm_smart_recall", query="payment webhook",
                                                         mode="lexical")["results"]]
    assert data["results"][0]["source"] == "mcp"
    # Readable text too, with the id an agent can act on.
    assert f"#{logged['id']}" in srv.text(found) and "payment webhook" in srv.text(found)


def test_log_form_and_log_show(srv):
    entry = srv.ok("marm_log_entry", text="2026-11-30-auth-switched to rotating refresh tokens")
    srv.ok("marm_log_entry", text="a plain note that is not a log entry")
    assert entry["log_id"]
    shown = srv.ok("marm_log_show")
    assert [e["id"] for e in shown["entries"]] == [entry["log_id"]]
    assert shown["entries"][0]["topic"] == "auth"


def test_same_text_twice_is_stored_once(srv):
    first = srv.ok("marm_log_entry", text="FIX: pin numpy below 3")
    again = srv.ok("marm_log_entry", text="FIX: pin numpy below 3")
    assert again["id"] == first["id"] and again["created"] is False


def test_secrets_are_redacted_on_the_mcp_path(srv):
    stored = srv.ok("marm_log_entry", text="deploy key is AKIAIOSFODNN7EXAMPLE for staging")
    assert "AKIAIOSFODNN7EXAMPLE" not in stored["content"]
    assert stored["redacted"]


def test_show_and_delete_while_a_sibling_stays(srv):
    gone = srv.ok("marm_log_entry", text="NOTE: rotate the staging API tokens every Friday")
    kept = srv.ok("marm_log_entry",
                  text="NOTE: rotate the staging API tokens every Friday before the demo")
    shown = srv.ok("marm_show", id=gone["id"])
    assert shown["memory"]["content"] == "NOTE: rotate the staging API tokens every Friday"
    deleted = srv.ok("marm_delete", type="memory", target=str(gone["id"]), reason="wrong")
    assert deleted["deleted"] is True
    ids = [r["id"] for r in srv.ok("marm_smart_recall", query="rotate staging tokens")["results"]]
    assert kept["id"] in ids and gone["id"] not in ids


def test_summary_groups_by_kind(srv):
    d = srv.ok("marm_log_entry", text="DECISION: drop redis for the job queue")
    f = srv.ok("marm_log_entry", text="FIX: the flaky login test waited on a stale cookie")
    out = srv.ok("marm_summary")
    assert out["total"] == 2
    kinds = {g["kind"]: [i["id"] for i in g["items"]] for g in out["groups"]}
    assert kinds == {"decision": [d["id"]], "fix": [f["id"]]}


def test_notebook_round_trip(srv):
    added = srv.ok("marm_notebook", action="add", name="style",
                   content="prefer small pure functions")
    assert added["entries"][0]["content"] == "prefer small pure functions"
    used = srv.ok("marm_notebook", action="use", name="style", session="s1")
    assert used["entries"][0]["active_in"] == ["s1"]
    srv.ok("marm_notebook", action="add", name="tests", content="real sqlite files only")
    listed = srv.ok("marm_notebook", action="list")
    assert sorted(e["name"] for e in listed["entries"]) == ["style", "tests"]
    srv.ok("marm_notebook", action="delete", name="style")
    names = [e["name"] for e in srv.ok("marm_notebook", action="list")["entries"]]
    assert names == ["tests"]


def test_sessions_and_status(srv):
    srv.ok("marm_log_entry", text="note in session alpha", session="alpha")
    sessions = srv.ok("marm_sessions")
    assert "alpha" in [s["name"] for s in sessions["sessions"]]
    status = srv.ok("marm_status")
    assert status["memories"]["total"] == 1
    assert "1 (1 active" in srv.text(srv.call("marm_status"))


def test_scope_comes_from_the_client_root(tmp_path, make_srv):
    alpha = git_init(tmp_path / "alpha")
    beta = git_init(tmp_path / "beta")
    started = tmp_path / "elsewhere"
    started.mkdir()
    in_alpha = make_srv(started, roots=[alpha], client_name="claude-code")
    in_beta = make_srv(started, roots=[beta], client_name="gemini-cli-mcp-client")
    a = in_alpha.ok("marm_log_entry", text="DECISION: the cache key includes the tenant id")
    b = in_beta.ok("marm_log_entry", text="DECISION: the cache key includes the region")
    assert a["project"] == str(alpha) and b["project"] == str(beta)
    beta_hits = in_beta.ok("marm_smart_recall", query="cache key")["results"]
    assert [h["id"] for h in beta_hits] == [b["id"]]          # alpha's memory is out of scope
    assert beta_hits[0]["platform"] == "gemini"
    alpha_hits = in_alpha.ok("marm_smart_recall", query="cache key")["results"]
    assert [h["id"] for h in alpha_hits] == [a["id"]] and alpha_hits[0]["platform"] == "claude"
    # A call may name the project explicitly, and widening is explicit too.
    named = in_beta.ok("marm_smart_recall", query="cache key", project=str(alpha))["results"]
    assert [h["id"] for h in named] == [a["id"]]
    both = in_beta.ok("marm_smart_recall", query="cache key", all_projects=True)["results"]
    assert {h["id"] for h in both} == {a["id"], b["id"]}


def test_without_roots_the_start_directory_decides(tmp_path, make_srv):
    repo = git_init(tmp_path / "repo")
    started_in_repo = make_srv(repo)
    stored = started_in_repo.ok("marm_log_entry", text="the release script tags from main")
    assert stored["project"] == str(repo)


def test_no_standing_instructions_in_results(srv, marm, work):
    """A tool's text is exactly what `marm <command> --text` prints: nothing rides along."""
    stored = srv.ok("marm_log_entry", text="DECISION: keep the API versioned in the URL")
    for tool, arguments, argv in (
        ("marm_smart_recall", {"query": "API versioned"}, ["recall", "API versioned"]),
        ("marm_summary", {}, ["summary"]),
    ):
        result = srv.call(tool, **arguments)
        assert not result.is_error and len(result.content) == 1
        cli = marm(*argv, "--text", cwd=work)
        assert cli.code == 0, cli.err
        assert srv.text(result) == cli.out.rstrip("\n")
        assert f"#{stored['id']} " in srv.text(result)


def test_a_client_whose_roots_fail_gets_the_start_directory(tmp_path, make_srv):
    repo = git_init(tmp_path / "repo")
    other = git_init(tmp_path / "other")
    calls = make_srv(repo, roots=[other])

    async def failing_roots(_context):
        raise RuntimeError("roots are broken in this client")

    client = calls.client()
    client.list_roots_callback = failing_roots

    async def run():
        async with client as c:
            first = await c.call_tool("marm_log_entry", {"text": "the first write"})
            second = await c.call_tool("marm_log_entry", {"text": "the second write"})
            return first, second

    first, second = asyncio.run(run())
    assert first.structured_content["project"] == str(repo)
    assert second.structured_content["project"] == str(repo)
    assert calls.served.roots_failed is True
