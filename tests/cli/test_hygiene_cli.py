"""`marm review` and `marm compact` through the CLI (in this process: ``invoke_marm``), the
briefing through a real ``marm hook session-start`` process, and `marm_review` over MCP STDIO."""

from __future__ import annotations

import json

import pytest

from tests.helpers import git_init, invoke_marm, run_marm
from tests.mcp.test_mcp_stdio import StdioClient


@pytest.fixture
def marm():
    """The CLI in this process: what these tests check is what the commands do (the
    process contract, exit codes and stdout, has tests of its own in test_core_cli)."""
    return invoke_marm

BACKGROUND = [
    "DECISION: the checkout page validates the postcode on the server, not in the browser",
    "The nightly export writes CSV files to the reports bucket at 02:00 UTC",
    "Emails are sent through Postmark from a background worker",
    "We use Redis for the session cache, with a 30 minute expiry",
]


def _populate(marm, repo) -> dict[str, int]:
    ids = {}
    for text in BACKGROUND:
        run = marm("log", text, "--json", cwd=repo)
        assert run.code == 0, run.err
        ids[text] = run.json()["id"]
    return ids


def test_review_lists_accepts_and_dismisses(marm, tmp_path):
    repo = git_init(tmp_path / "shop")
    ids = _populate(marm, repo)
    dup = marm("log", "Emails are sent through Postmark by a background worker", cwd=repo).json()["id"]
    rev = marm("log", "We no longer use Redis for the session cache; sessions live in Postgres", cwd=repo).json()["id"]
    blog = git_init(tmp_path / "blog")  # another project's duplicate: counted for all projects only
    for text in ("Posts are rendered to static HTML by a nightly job", "Posts are rendered to static HTML by the nightly job"):
        assert marm("log", text, cwd=blog).code == 0
    assert marm("drain", "--json", cwd=repo).code == 0
    status = marm("status", "--json", cwd=repo).json()
    assert status["review"] == {"contradiction": 1, "duplicate": 1} and status["review_all_projects"] == 3
    assert "review     2 item(s) wait here (1 contradiction, 1 duplicate): `marm review`; 3 in all projects" in marm(
        "status", "--text", cwd=repo).out
    listed = marm("review", "--json", cwd=repo)
    assert listed.code == 0, listed.err
    items = {i["kind"]: i for i in listed.json()["items"]}
    assert set(items) == {"duplicate", "contradiction"}
    assert (items["duplicate"]["old_id"], items["duplicate"]["new_id"]) == (dup, ids[BACKGROUND[2]])
    redis = ids[BACKGROUND[3]]
    assert (items["contradiction"]["old_id"], items["contradiction"]["new_id"]) == (redis, rev)
    text = marm("review", "--text", cwd=repo)
    assert f"#{redis} may be reversed by #{rev}" in text.out
    accepted = marm("review", "accept", str(items["contradiction"]["id"]), "--json", cwd=repo)
    assert accepted.code == 0 and accepted.json()["changed"] is True
    assert marm("show", str(redis), "--json", cwd=repo).json()["memory"]["status"] == "superseded"
    assert marm("review", "dismiss", str(items["duplicate"]["id"]), cwd=repo).code == 0
    assert marm("review", "--json", cwd=repo).json()["items"] == []
    after = marm("status", "--json", cwd=repo).json()
    assert after["review"] == {} and after["review_all_projects"] == 1  # the blog's item still waits
    assert "review     nothing waits here; 1 in all projects" in marm("status", "--text", cwd=repo).out
    assert marm("show", str(dup), "--json", cwd=repo).json()["memory"]["status"] == "active"
    # clear errors and exit codes
    missing = marm("review", "accept", cwd=repo)
    assert missing.code == 2 and "needs the item number" in missing.err
    unknown = marm("review", "accept", "999", cwd=repo)
    assert unknown.code == 3 and "no review item 999" in unknown.err
    again = marm("review", "accept", str(items["duplicate"]["id"]), "--json", cwd=repo)
    assert again.code == 0 and again.json()["changed"] is False and "already dismissed" in again.json()["message"]


def test_compact_dry_run_then_restore(marm, tmp_path):
    repo = git_init(tmp_path / "shop")
    _populate(marm, repo)
    plan = marm("compact", "--dry-run", "--json", cwd=repo)
    assert plan.code == 0 and plan.json()["dry_run"] is True and plan.json()["folds"] == []
    assert "no episodes older than 30 days" in marm("compact", "--dry-run", "--text", cwd=repo).out
    bad = marm("compact", "--older-than", "-1", cwd=repo)
    assert bad.code == 2 and "--older-than" in bad.err
    gone = marm("compact", "--restore", "424242", cwd=repo)
    assert gone.code == 3 and "not a summary" in gone.err
    helped = marm("compact", "--help")
    assert helped.code == 0 and "marm compact --older-than 60" in helped.out and "Examples" in helped.out


@pytest.mark.slow
def test_marm_review_over_mcp_stdio(marm, tmp_path):
    repo = git_init(tmp_path / "shop")
    ids = _populate(marm, repo)
    dup = marm("log", "Emails are sent through Postmark by a background worker", cwd=repo).json()["id"]
    assert marm("drain", cwd=repo).code == 0
    client = StdioClient(repo)
    try:
        client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "pytest", "version": "0"}})
        client.send({"method": "notifications/initialized"})
        listed = client.call("marm_review")["structuredContent"]
        assert [(i["kind"], i["old_id"], i["new_id"]) for i in listed["items"]] == [
            ("duplicate", dup, ids[BACKGROUND[2]])]
        done = client.call("marm_review", action="dismiss", item=listed["items"][0]["id"])
        assert not done.get("isError") and done["structuredContent"]["changed"] is True
        assert client.call("marm_review")["structuredContent"]["items"] == []
    finally:
        code, err = client.close()
    assert code == 0, err
    for line in client.lines:
        json.loads(line)


def test_the_briefing_leaves_out_what_a_newer_memory_may_reverse(marm, tmp_path):
    repo = git_init(tmp_path / "shop")
    _populate(marm, repo)
    # two sessions: the briefing's own same-session reversal rule does not apply
    old = marm("log", "DECISION: we use Redis for the session cache", "-s", "monday", cwd=repo).json()["id"]
    new = marm("log", "DECISION: we no longer use Redis for the session cache; sessions live in Postgres",
               "-s", "friday", cwd=repo).json()["id"]
    assert marm("drain", cwd=repo).code == 0
    payload = {"session_id": "brief", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
    run = run_marm("hook", "session-start", "--agent", "claude", input=json.dumps(payload), cwd=repo)
    assert run.code == 0, run.err
    context = json.loads(run.out)["hookSpecificOutput"]["additionalContext"]
    assert f"#{new} " in context and "validates the postcode" in context  # the current ones are briefed
    assert f"#{old} " not in context
