"""`marm summarize` (the agent-written summary of a cluster of old episodes) through the
CLI in this process (``invoke_marm``), and `marm_summarize` over a real MCP STDIO session."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from marm.context import Ctx
from marm.ops.memory import write_memory
from tests.helpers import git_init, invoke_marm
from tests.mcp.test_mcp_stdio import StdioClient


@pytest.fixture
def marm():
    """The CLI in this process: these tests check what the commands do (the process
    contract, exit codes and stdout, has tests of its own in test_core_cli)."""
    return invoke_marm

OLD = "2026-01-1%dT10:00:00.000000Z"  # Monday 12 to Thursday 15: one ISO week
HAND = "DECISION: invoices are rendered by the worker, never in the request"


def _episode(n: int) -> str:
    return (f"Asked: why does the invoice PDF step {n} fail on long addresses?\n"
            f"Concluded: The template did not wrap the address block in step {n}. We now wrap it and "
            f"test with a 200 character address; the renderer measured the block before fonts loaded.\n"
            f"Changed: templates/invoice.html, tests/test_invoice_{n}.py")


def _populate(repo: Path) -> tuple[list[int], int, int]:
    """Three old episodes of one session (one cluster), a recent one, a hand-written memory."""
    env = dict(os.environ)
    hook = Ctx(source="hook:stop", platform="claude", cwd=repo, env={**env, "MARM_SESSION": "s-old"})
    person = Ctx(source="cli", cwd=repo, env=env)
    try:
        episodes = [write_memory(hook, _episode(n), kind="episode", recorded_at=OLD % n).id for n in (2, 3, 4)]
        recent = write_memory(hook, "Asked: is the export fast?\nConcluded: Yes, two seconds.", kind="episode").id
        hand = write_memory(person, HAND, recorded_at=OLD % 2).id
    finally:
        hook.close()
        person.close()
    return episodes, recent, hand


def _rows(ids: list[int]) -> list[tuple]:
    conn = sqlite3.connect(Path(os.environ["MARM_HOME"]) / "marm.db")
    try:
        marks = ",".join("?" * len(ids))
        return conn.execute(f"SELECT * FROM memories WHERE id IN ({marks}) ORDER BY id", ids).fetchall()
    finally:
        conn.close()


SUMMARY = ("Invoice PDFs failed on long addresses: the template did not wrap the address block. "
           "Now wrapped (templates/invoice.html) and tested with a 200 character address.")


def test_stage_discard_apply_and_restore_byte_for_byte(marm, tmp_path):
    repo = git_init(tmp_path / "shop")
    episodes, recent, hand = _populate(repo)
    before = _rows([*episodes, recent, hand])

    listed = marm("summarize", "--json", cwd=repo)
    assert listed.code == 0, listed.err
    (cluster,) = listed.json()["clusters"]
    assert cluster["id"] == episodes[0] and cluster["state"] == "unsummarized"
    assert [s["id"] for s in cluster["sources"]] == episodes  # not the recent episode, not the hand-written one
    assert [s["content"] for s in cluster["sources"]] == [_episode(n) for n in (2, 3, 4)]
    shown = marm("summarize", "list", str(cluster["id"]), "--text", cwd=repo)
    assert shown.code == 0 and "the renderer measured the block before fonts loaded" in shown.out

    assert marm("summarize", "list", "999", cwd=repo).code == 3
    not_staged = marm("summarize", "apply", str(cluster["id"]), cwd=repo)
    assert not_staged.code == 3 and "no summary is staged" in not_staged.err
    too_long = marm("summarize", "stage", str(cluster["id"]), "--summary", "x" * 5000, cwd=repo)
    assert too_long.code == 2 and "shorter than what it replaces" in too_long.err
    assert marm("summarize", "stage", str(cluster["id"]), cwd=repo).code == 2  # no text
    assert _rows([*episodes, recent, hand]) == before  # refusals change nothing

    staged = marm("summarize", "stage", str(cluster["id"]), "--summary", "-", "--json", input="first try", cwd=repo)
    assert staged.code == 0, staged.err
    again = marm("summarize", "--json", cwd=repo).json()["clusters"]
    assert [(c["id"], c["state"], c["summary"]) for c in again] == [(episodes[0], "staged", "first try")]
    dropped = marm("summarize", "discard", str(cluster["id"]), "-r", "too short", "--json", cwd=repo)
    assert dropped.code == 0 and dropped.json()["changed"] is True
    assert [c["state"] for c in marm("summarize", "--json", cwd=repo).json()["clusters"]] == ["unsummarized"]
    assert _rows([*episodes, recent, hand]) == before  # staging and discarding touch no memory

    assert marm("summarize", "stage", str(cluster["id"]), "--summary", SUMMARY, cwd=repo).code == 0
    applied = marm("summarize", "apply", str(cluster["id"]), "--json", cwd=repo)
    assert applied.code == 0, applied.err
    summary_id = applied.json()["summary_id"]
    memory = marm("show", str(summary_id), "--json", cwd=repo).json()["memory"]
    assert memory["kind"] == "summary" and memory["content"] == SUMMARY
    states = {i: marm("show", str(i), "--json", cwd=repo).json()["memory"]["status"]
              for i in [*episodes, recent, hand]}
    assert states == {**{e: "superseded" for e in episodes}, recent: "active", hand: "active"}
    found = [r["id"] for r in marm("recall", "invoice long address wrap", "--json", cwd=repo).json()["results"]]
    assert summary_id in found and not set(episodes) & set(found)
    assert marm("summarize", "--json", cwd=repo).json()["clusters"] == []  # folded: nothing left to summarize

    back = marm("compact", "--restore", str(summary_id), "--json", cwd=repo)
    assert back.code == 0 and back.json()["restored"] == episodes
    assert _rows([*episodes, recent, hand]) == before  # byte for byte
    actions = [e["action"] for e in marm("history", str(episodes[1]), "--json", cwd=repo).json()["events"]]
    assert actions[-2:] == ["memory.compact", "memory.restore"]


def test_an_apply_after_the_sources_changed_is_refused_as_stale(marm, tmp_path):
    repo = git_init(tmp_path / "shop")
    episodes, _, _ = _populate(repo)
    assert marm("summarize", "stage", str(episodes[0]), "--summary", SUMMARY, cwd=repo).code == 0
    folded = marm("compact", "--json", cwd=repo)  # the extractive route folds them first
    assert folded.code == 0 and folded.json()["folds"][0]["sources"] == episodes
    stale = marm("summarize", "apply", str(episodes[0]), cwd=repo)
    assert stale.code == 2 and "stale" in stale.err
    kinds = [m["kind"] for m in marm("recall", "invoice long address wrap", "--json", cwd=repo).json()["results"]]
    assert kinds.count("summary") == 1  # the extractive one only
    assert marm("summarize", "apply", str(episodes[0]), cwd=repo).code == 3  # stale is closed


def _stage_two_clusters(marm, repo: Path) -> tuple[int, int]:
    """Two sessions of old episodes (two clusters), a summary staged for each; the first
    one's staged 20 days ago (longer than the 14 days summarize.staged_days allows)."""
    first, _, _ = _populate(repo)
    hook = Ctx(source="hook:stop", platform="claude", cwd=repo, env={**os.environ, "MARM_SESSION": "s-other"})
    try:
        second = [write_memory(hook, _episode(n).replace("invoice PDF", "receipt email"), kind="episode",
                               recorded_at=OLD % n).id for n in (5, 6)]
    finally:
        hook.close()
    for cluster in (first[0], second[0]):
        assert marm("summarize", "stage", str(cluster), "--summary", f"summary of {cluster}", cwd=repo).code == 0
    conn = sqlite3.connect(Path(os.environ["MARM_HOME"]) / "marm.db")
    with conn:
        conn.execute("UPDATE staged_summaries SET staged_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-20 days')"
                     " WHERE cluster = ?", (first[0],))
    conn.close()
    return first[0], second[0]


def _staged_states() -> dict[int, tuple[str, str | None]]:
    conn = sqlite3.connect(Path(os.environ["MARM_HOME"]) / "marm.db")
    try:
        return {c: (s, r) for c, s, r in conn.execute(
            "SELECT s.cluster, s.state, e.reason FROM staged_summaries s LEFT JOIN events e"
            " ON e.entity = 'staged_summary' AND e.entity_id = s.id AND e.action = 'summary.discarded'")}
    finally:
        conn.close()


def test_a_staged_summary_nobody_decides_on_expires_when_listed_and_a_fresh_one_stays(marm, tmp_path):
    repo = git_init(tmp_path / "shop")
    old, fresh = _stage_two_clusters(marm, repo)
    listed = marm("summarize", "--json", cwd=repo)
    assert listed.code == 0, listed.err
    by_id = {c["id"]: c for c in listed.json()["clusters"]}
    assert by_id[fresh]["state"] == "staged" and by_id[fresh]["summary"] == f"summary of {fresh}"
    assert by_id[old]["state"] == "unsummarized" and by_id[old]["summary"] is None  # its cluster is offered again
    states = _staged_states()
    assert states[fresh] == ("staged", None)
    assert states[old][0] == "discarded" and "expired" in states[old][1]
    assert marm("summarize", "apply", str(old), cwd=repo).code == 3  # nothing staged for it any more
    assert marm("summarize", "apply", str(fresh), cwd=repo).code == 0  # the fresh one still applies


def test_the_drain_discards_a_staged_summary_past_its_age_and_keeps_a_fresh_one(marm, tmp_path):
    repo = git_init(tmp_path / "shop")
    old, fresh = _stage_two_clusters(marm, repo)
    drained = marm("drain", "--json", cwd=repo)
    assert drained.code == 0, drained.err
    assert drained.json()["sweeps"]["hygiene"]["staged summaries expired"] == 1
    states = _staged_states()
    assert states[fresh] == ("staged", None) and states[old][0] == "discarded" and "expired" in states[old][1]
    shorter = marm("config", "set", "summarize.staged_days", "0", cwd=repo)
    assert shorter.code == 0, shorter.err
    assert marm("summarize", "--json", cwd=repo).json()["clusters"][-1]["state"] == "unsummarized"
    assert _staged_states()[fresh][0] == "discarded"  # the setting decides the age


@pytest.mark.slow
def test_marm_summarize_over_mcp_stdio_and_no_nudge_in_other_results(marm, tmp_path):
    repo = git_init(tmp_path / "shop")
    episodes, _, hand = _populate(repo)
    client = StdioClient(repo)
    try:
        client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "pytest", "version": "0"}})
        client.send({"method": "notifications/initialized"})
        tools = {t["name"]: t for t in client.request("tools/list")["tools"]}
        assert "stage" in tools["marm_summarize"]["description"]
        listed = client.call("marm_summarize")["structuredContent"]
        (cluster,) = listed["clusters"]
        assert [s["id"] for s in cluster["sources"]] == episodes
        # what MARM did wrong: nothing asks for a summary inside another tool's result
        recalled = client.call("marm_smart_recall", query="how are invoices rendered")
        assert hand in [r["id"] for r in recalled["structuredContent"]["results"]]
        said = [c["text"] for c in recalled["content"]] + [
            str(v) for r in recalled["structuredContent"]["results"] for k, v in r.items() if k != "project"]
        assert "summar" not in " ".join(said).lower() and "cluster" not in " ".join(said).lower()
        dash = client.call("marm_summarize", action="stage", cluster=cluster["id"], summary="-")
        assert dash.get("isError")
        staged = client.call("marm_summarize", action="stage", cluster=cluster["id"], summary=SUMMARY)
        assert not staged.get("isError"), staged
        applied = client.call("marm_summarize", action="apply", cluster=cluster["id"])
        assert not applied.get("isError"), applied
        summary_id = applied["structuredContent"]["summary_id"]
        shown = client.call("marm_show", id=summary_id)["structuredContent"]
        assert shown["memory"]["content"] == SUMMARY and shown["memory"]["source"] == "mcp"
    finally:
        code, err = client.close()
    assert code == 0, err
    for line in client.lines:
        json.loads(line)
