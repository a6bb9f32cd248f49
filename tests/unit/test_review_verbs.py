"""Review verbs in-process, on a populated store: every negative assertion is made
against a result that also holds the right answer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from marm.context import Ctx
from marm.errors import BadInput, NotFound, Refused
from marm.ops import review
from marm.ops.memory import log_show, recall, write_memory
from marm.store import events, memories, outbox
from tests.helpers import git_init


def _ids(ctx: Ctx, query: str, **kw) -> list[int]:
    return [r.id for r in recall(ctx, query, limit=20, **kw).results]


@pytest.fixture
def seeded(ctx: Ctx) -> dict[str, int]:
    """Memories that share the words "payment webhook", plus unrelated ones."""
    texts = {
        "keys": "DECISION: the payment webhook uses idempotency keys",
        "retry": "the payment webhook retries three times with backoff",
        "queue": "FIX: payment webhook events go through the queue now",
        "log": "2025-03-04-webhooks-payment webhook signature is checked first",
        "other1": "the build uses ninja and ccache",
        "other2": "release notes are written by hand",
    }
    return {k: write_memory(ctx, t).id for k, t in texts.items()}


def test_doubted_memory_is_returned_marked(ctx, seeded):
    review.doubt(ctx, seeded["keys"], reason="nobody remembers why")
    found = {r.id: r for r in recall(ctx, "payment webhook", limit=20).results}
    assert found[seeded["keys"]].status == "doubted"
    assert found[seeded["keys"]].status_reason == "nobody remembers why"
    assert found[seeded["retry"]].status == "active"
    assert "[doubted]" in found[seeded["keys"]].line()


def test_retracted_memory_is_absent_while_its_sibling_is_present(ctx, seeded):
    review.retract(ctx, seeded["retry"], reason="wrong: it retries five times")
    ids = _ids(ctx, "payment webhook retries")
    assert seeded["keys"] in ids and seeded["queue"] in ids
    assert seeded["retry"] not in ids
    exact = _ids(ctx, '"payment webhook"')
    assert seeded["keys"] in exact and seeded["retry"] not in exact
    widened = recall(ctx, "payment webhook retries", limit=20, include="retracted").results
    assert {r.id: r.status for r in widened}[seeded["retry"]] == "retracted"


def test_writing_retracted_text_is_refused_then_forced(ctx, seeded):
    text = "the payment webhook retries three times with backoff"
    review.retract(ctx, seeded["retry"], reason="wrong")
    with pytest.raises(Refused, match="retracted.*--force") as refused:
        write_memory(ctx, "the payment  webhook retries three times with backoff")  # same normalised text
    assert refused.value.exit_code == 5
    assert write_memory(ctx, "the payment webhook retries five times").created  # other text is fine
    forced = write_memory(ctx, text, force=True)
    assert forced.created and forced.id != seeded["retry"]
    create = events.for_entity(ctx.store(), "memory", forced.id)[0]
    assert create.action == "memory.create"
    assert create.detail["forced"] is True and create.detail["tombstone_of"] == seeded["retry"]
    assert forced.id in _ids(ctx, "payment webhook retries")


def test_tombstone_is_scoped_to_the_project(ctx, tmp_path):
    repo_a, repo_b = git_init(tmp_path / "a"), git_init(tmp_path / "b")
    text = "the cache is flushed on deploy"
    in_a = write_memory(ctx, text, project=str(repo_a))
    review.retract(ctx, in_a.id)
    with pytest.raises(Refused):
        write_memory(ctx, text, project=str(repo_a))
    assert write_memory(ctx, text, project=str(repo_b)).created
    assert write_memory(ctx, text).created  # global scope has no tombstone


def test_restore_lifts_retraction_and_tombstone(ctx, seeded):
    review.retract(ctx, seeded["retry"])
    restored = review.restore(ctx, seeded["retry"], reason="it was right after all")
    assert restored.changed and restored.status == "active" and restored.previous_status == "retracted"
    assert seeded["retry"] in _ids(ctx, "payment webhook retries")
    again = write_memory(ctx, "the payment webhook retries three times with backoff")
    assert again.id == seeded["retry"] and not again.created  # no refusal, the same memory
    assert not review.restore(ctx, seeded["retry"]).changed


def test_superseded_memory_is_absent_and_new_one_present(ctx, seeded):
    new = write_memory(ctx, "DECISION: the payment webhook dedupes on the event id").id
    result = review.supersede(ctx, seeded["keys"], by=new, reason="keys were dropped")
    assert result.memory is not None and result.memory.superseded_by == new
    assert result.memory.valid_to is not None
    ids = _ids(ctx, "payment webhook decision")
    assert new in ids and seeded["retry"] in ids
    assert seeded["keys"] not in ids
    assert seeded["keys"] in _ids(ctx, "payment webhook decision", include="superseded")
    again = review.supersede(ctx, seeded["keys"], by=new)
    assert not again.changed


def test_restore_of_superseded_puts_back_its_valid_to(ctx):
    old = write_memory(ctx, "staging runs on one node", valid_to="2031-01-01").id
    new = write_memory(ctx, "staging runs on three nodes", valid_from="2030-06-01").id
    after = review.supersede(ctx, old, by=new).memory
    assert after is not None and after.valid_to == "2030-06-01T00:00:00.000000Z"
    back = review.restore(ctx, old).memory
    assert back is not None and back.status == "active"
    assert back.valid_to == "2031-01-01T00:00:00.000000Z" and back.superseded_by is None


def test_as_of_before_supersede_returns_old_and_after_returns_new(ctx, seeded):
    old = write_memory(ctx, "the deploy target is heroku", valid_from="2024-01-01").id
    new = write_memory(ctx, "the deploy target is fly.io now", valid_from="2025-06-01").id
    review.supersede(ctx, old, by=new)
    before = _ids(ctx, "deploy target", as_of="2025-01-15")
    after = _ids(ctx, "deploy target", as_of="2025-12-01")
    assert old in before and new not in before
    assert new in after and old not in after
    now = _ids(ctx, "deploy target")
    assert new in now and old not in now


def test_supersede_refusals(ctx, seeded, tmp_path):
    with pytest.raises(BadInput, match="itself"):
        review.supersede(ctx, seeded["keys"], by=seeded["keys"])
    review.retract(ctx, seeded["queue"])
    with pytest.raises(BadInput, match="retracted"):
        review.supersede(ctx, seeded["keys"], by=seeded["queue"])
    in_project = write_memory(ctx, "project note on webhooks", project=str(git_init(tmp_path / "p"))).id
    with pytest.raises(BadInput, match="another project"):
        review.supersede(ctx, seeded["keys"], by=in_project)  # a global memory would vanish elsewhere
    with pytest.raises(BadInput, match="restore"):
        review.doubt(ctx, seeded["queue"])
    with pytest.raises(NotFound):
        review.retract(ctx, 999)


def _db_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.glob("marm.db*"))


def test_forget_erases_the_text_everywhere_and_keeps_content_free_events(ctx, seeded, marm_home):
    store = ctx.store()
    secret = "the payment webhook signs with Xylophonequartz77 as its salt"
    target = write_memory(ctx, "2025-05-05-salt-" + secret).id
    with store.write():
        file_id = store.conn.execute("INSERT INTO vector_files (model, project, dim, rows)"
                                     " VALUES ('fake', NULL, 1, 1)").lastrowid
        store.conn.execute(
            "INSERT INTO memory_vectors (memory_id, model, chunk, dim, start_char, end_char,"
            " content_hash, file_id, row) VALUES (?, 'fake', 0, 1, 0, 1, 'h', ?, 0)", (target, file_id))
    review.retract(ctx, target, reason="leaked salt")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert b"Xylophonequartz77" in _db_bytes(marm_home)  # the check below can fail

    result = review.forget(ctx, target, reason="privacy")
    assert result.status is None and result.changed

    ids = _ids(ctx, "payment webhook signs salt")
    assert seeded["log"] in ids and seeded["keys"] in ids and target not in ids
    assert _ids(ctx, '"Xylophonequartz77"', include="retracted,superseded") == []  # exact lane
    assert memories.get(store, target) is None
    for table, column in (("memory_vectors", "memory_id"), ("log_entries", "memory_id")):
        left = store.conn.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?", (target,))
        assert left.fetchone()[0] == 0
    assert store.conn.execute("SELECT count(*) FROM outbox WHERE kind = 'embed' AND target = ?",
                              (str(target),)).fetchone()[0] == 0
    assert outbox.pending(store, "concepts") > 0  # re-armed so the graph drops it
    dump = "\n".join(str(row) for row in store.conn.execute("SELECT * FROM events"))
    assert "Xylophonequartz77" not in dump and "xylophonequartz77" not in dump
    data = _db_bytes(marm_home)
    assert b"Xylophonequartz77" not in data and b"xylophonequartz77" not in data
    assert b"idempotency keys" in data  # the sibling is still stored

    hist = review.history(ctx, target)
    assert hist.status is None
    assert [e.action for e in hist.events] == [
        "memory.create", "log.create", "memory.retract", "tombstone.add", "log.forget", "memory.forget"]
    assert hist.events[-1].reason == "privacy" and hist.events[-1].before_hash
    with pytest.raises(NotFound, match="forgotten"):
        review.restore(ctx, target)
    with pytest.raises(Refused):  # the tombstone (a hash, not the text) still stands
        write_memory(ctx, "2025-05-05-salt-" + secret)


def test_forgetting_the_newer_memory_unlinks_the_older(ctx, seeded):
    new = write_memory(ctx, "DECISION: the payment webhook dedupes on event ids").id
    review.supersede(ctx, seeded["keys"], by=new)
    review.forget(ctx, new)
    old = memories.get(ctx.store(), seeded["keys"])
    assert old is not None and old.status == "superseded" and old.superseded_by is None
    assert review.history(ctx, seeded["keys"]).events[-1].action == "memory.unlink"


def test_history_is_oldest_first_with_surface_platform_reason_and_hashes(marm_home, tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    agent = Ctx(source="mcp", platform="claude", cwd=work, env=dict(os.environ))
    shell = Ctx(source="cli", cwd=work, env=dict(os.environ))
    try:
        first = write_memory(agent, "the staging database is postgres 15").id
        second = write_memory(shell, "the staging database is postgres 16").id
        review.doubt(shell, first, reason="version changed?")
        review.supersede(agent, first, by=second, reason="upgraded")
        review.restore(shell, first)
        hist = review.history(shell, first)
        newer = [(e.action, e.entity_id) for e in review.history(shell, second).events]
    finally:
        agent.close()
        shell.close()
    actions = [e.action for e in hist.events]
    assert actions == ["memory.create", "memory.doubt", "memory.supersede", "memory.restore"]
    assert [(e.source, e.platform) for e in hist.events] == [
        ("mcp", "claude"), ("cli", None), ("mcp", "claude"), ("cli", None)]
    assert hist.events[1].reason == "version changed?" and hist.events[2].reason == "upgraded"
    assert hist.events[2].detail["superseded_by"] == second
    assert all(e.after_hash == hist.events[0].after_hash for e in hist.events)
    assert [e.at for e in hist.events] == sorted(e.at for e in hist.events)
    assert hist.status == "active"
    assert newer == [("memory.create", str(second)), ("memory.supersede", str(first))]


def test_recall_carries_full_provenance(marm_home, tmp_path):
    repo = git_init(tmp_path / "repo")
    agent = Ctx(source="hook:stop", platform="codex", cwd=repo, env=dict(os.environ))
    try:
        written = write_memory(agent, "FIX: the flaky upload test needed a longer timeout", session="s-42")
        write_memory(agent, "the upload service runs on port 8080")
        hit = next(r for r in recall(agent, "flaky upload timeout").results if r.id == written.id)
    finally:
        agent.close()
    assert (hit.source, hit.platform, hit.session, hit.project) == ("hook:stop", "codex", "s-42", str(repo))
    assert hit.recorded_at.endswith("Z") and hit.kind == "fix"


def test_include_rejects_unknown_status(ctx, seeded):
    with pytest.raises(BadInput, match="--include"):
        recall(ctx, "payment", include="deleted")


def test_log_show_leaves_out_retracted_entries(ctx, seeded):
    kept = write_memory(ctx, "2025-03-05-webhooks-payment webhook moved to the queue")
    review.retract(ctx, seeded["log"])
    shown = [e.memory_id for e in log_show(ctx).entries]
    assert kept.id in shown and seeded["log"] not in shown
