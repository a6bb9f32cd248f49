"""Export and import in-process: a round trip into an empty store reproduces recall
and history; importing twice adds nothing; taken ids are remapped; forgotten text
stays forgotten."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from marm.context import Ctx
from marm.errors import BadInput, Refused
from marm.ops import review
from marm.ops.memory import recall, write_memory
from marm.ops.notebook import notebook_op
from marm.ops.transfer import export, import_
from marm.store import events, outbox
from tests.helpers import git_init

QUERIES = [
    ("payment webhook", {}),
    ('"idempotency keys"', {}),
    ("payment webhook", {"include": "retracted,superseded"}),
    ("deploy target", {"as_of": "2025-01-15"}),
    ("deploy target", {"as_of": "2025-12-01"}),
    ("deploy target", {}),
    ("webhook", {"all_projects": True}),
]


def _ctx(home: Path, cwd: Path, **kw) -> Ctx:
    return Ctx(cwd=cwd, env={**os.environ, "MARM_HOME": str(home)}, **kw)


def _populate(ctx: Ctx, repo: Path) -> dict[str, int]:
    ids = {
        "keys": write_memory(ctx, "DECISION: the payment webhook uses idempotency keys").id,
        "retry": write_memory(ctx, "the payment webhook retries three times").id,
        "log": write_memory(ctx, "2025-03-04-webhooks-payment webhook signature is checked first").id,
        "proj": write_memory(ctx, "the repo's webhook tests need the stripe fixture", project=str(repo)).id,
        "old": write_memory(ctx, "the deploy target is heroku", valid_from="2024-01-01").id,
        "new": write_memory(ctx, "the deploy target is fly.io", valid_from="2025-06-01").id,
        "gone": write_memory(ctx, "the payment webhook secret lives in vault path kv/pay").id,
        "dedupe": write_memory(ctx, "the payment webhook dedupes on event ids").id,
    }
    review.doubt(ctx, ids["dedupe"], reason="unsure")
    review.retract(ctx, ids["retry"], reason="it retries five times")
    review.supersede(ctx, ids["old"], by=ids["new"], reason="moved")
    review.forget(ctx, ids["gone"], reason="privacy")
    notebook_op(ctx, "add", "style", "answer in short sentences")
    notebook_op(ctx, "use", "style")
    store = ctx.store()
    with store.write():
        at = "2025-01-01T00:00:00.000000Z"
        store.conn.execute("INSERT INTO concept_aliases VALUES ('pg', 'postgres', ?)", (at,))
        store.conn.execute("INSERT INTO concept_suppressions VALUES ('thing', 'noise', ?)", (at,))
        store.conn.execute("INSERT INTO concept_dismissals VALUES ('a', 'b', ?)", (at,))
    return ids


def _answers(ctx: Ctx) -> list[list[tuple]]:
    out = []
    for query, kw in QUERIES:
        rows = recall(ctx, query, limit=20, **kw).results
        out.append([(r.id, r.content, r.status, r.source, r.platform, r.session, r.project, r.recorded_at,
                     r.valid_from, r.valid_to, r.superseded_by, r.kind) for r in rows])
    return out


def _history(ctx: Ctx, memory_id: int) -> list[tuple]:
    return [(e.at, e.action, e.entity, e.entity_id, e.source, e.platform, e.session, e.project, e.reason,
             e.before_hash, e.after_hash, e.detail)
            for e in review.history(ctx, memory_id).events if e.source != "import"]


@pytest.fixture
def exported(tmp_path: Path, marm_home: Path):
    work = git_init(tmp_path / "repo")
    source = _ctx(marm_home, work, platform="claude")
    ids = _populate(source, work)
    result = export(source, all_projects=True)
    path = tmp_path / "backup.jsonl"
    path.write_text("".join(line + "\n" for line in result.document()))
    yield source, ids, path, work
    source.close()


def test_round_trip_into_an_empty_store_reproduces_recall_and_history(exported, tmp_path):
    source, ids, path, work = exported
    target = _ctx(tmp_path / "other-home", work)
    try:
        imported = import_(target, str(path))
        assert imported.remapped == {} and imported.added["memory"] == len(ids) - 1
        # queued for embedding (checked before any recall, which embeds a few itself)
        assert outbox.pending(target.store(), "embed") == len(ids) - 1
        expected = _answers(source)
        assert all(expected), "every query has an answer in the source store"
        assert _answers(target) == expected
        for memory_id in ids.values():
            assert _history(target, memory_id) == _history(source, memory_id), memory_id
            marks = [e for e in review.history(target, memory_id).events if e.source == "import"]
            if memory_id != ids["gone"]:
                assert marks and marks[0].action == "memory.import"
        assert review.history(target, ids["gone"]).status is None  # forgotten there, history kept
        with pytest.raises(Refused):  # the tombstone came along
            write_memory(target, "the payment webhook retries three times")
        fresh = write_memory(target, "a memory written after the import").id
        assert fresh > max(ids.values())  # never the id of the forgotten memory
        assert notebook_op(target, "show", "style").entries[0].active_in == ["default"]
        aliases = target.store().conn.execute("SELECT alias, canonical FROM concept_aliases").fetchall()
        assert aliases == [("pg", "postgres")]
    finally:
        target.close()


def test_importing_the_same_file_twice_adds_nothing(exported, tmp_path):
    _, ids, path, work = exported
    target = _ctx(tmp_path / "other-home", work)
    try:
        first = import_(target, str(path))
        store = target.store()
        before = (events.count(store), store.conn.execute("SELECT count(*) FROM memories").fetchone()[0])
        second = import_(target, str(path))
        assert sum(second.added.values()) == 0 and second.already_here["memory"] == first.added["memory"]
        after = (events.count(store), store.conn.execute("SELECT count(*) FROM memories").fetchone()[0])
        assert after == before and before[1] == len(ids) - 1
    finally:
        target.close()


def test_import_into_its_own_store_adds_nothing(exported):
    source, _, path, _ = exported
    store = source.store()
    before = events.count(store)
    result = import_(source, str(path))
    assert sum(result.added.values()) == 0 and events.count(store) == before


def test_taken_ids_are_remapped_with_their_log_links_and_history(exported, tmp_path):
    source, ids, path, work = exported
    target = _ctx(tmp_path / "other-home", work)
    try:
        local = [write_memory(target, f"a local memory number {i} about lunch").id for i in range(3)]
        result = import_(target, str(path))
        assert set(result.remapped) == {str(i) for i in local if i in ids.values()}
        store = target.store()
        assert store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 3 + len(ids) - 1
        mapped = {int(k): v for k, v in result.remapped.items()}
        new_old = mapped.get(ids["old"], ids["old"])
        old_row = recall(target, "deploy target", include="superseded").results
        by_id = {r.id: r for r in old_row}
        assert by_id[new_old].superseded_by == mapped.get(ids["new"], ids["new"])
        for i in local:
            assert [e.action for e in review.history(target, i).events] == ["memory.create"]
            assert "lunch" in recall(target, f"local memory number {i} lunch").results[0].content
        keys = mapped.get(ids["keys"], ids["keys"])
        assert [e.action for e in review.history(target, keys).events] == ["memory.create", "memory.import"]
        again = import_(target, str(path))
        assert sum(again.added.values()) == 0 and again.remapped == result.remapped
    finally:
        target.close()


def test_text_forgotten_here_is_not_brought_back(exported, tmp_path):
    _, ids, path, work = exported
    target = _ctx(tmp_path / "other-home", work)
    try:
        import_(target, str(path))
        review.forget(target, ids["keys"], reason="not wanted here")
        result = import_(target, str(path))
        assert result.not_restored == 1 and sum(result.added.values()) == 0
        found = [r.id for r in recall(target, "payment webhook", limit=20).results]
        assert ids["log"] in found and ids["keys"] not in found
    finally:
        target.close()


def test_text_retracted_here_comes_in_retracted(exported, tmp_path):
    _, ids, path, work = exported
    target = _ctx(tmp_path / "other-home", work)
    try:
        local = write_memory(target, "DECISION: the payment webhook uses idempotency keys").id
        review.retract(target, local, reason="we dropped the keys")
        result = import_(target, str(path))
        assert result.kept_retracted == 1
        found = [r.id for r in recall(target, "payment webhook", limit=20).results]
        assert ids["log"] in found
        imported_keys = int(result.remapped.get(str(ids["keys"]), ids["keys"]))
        assert imported_keys not in found and local not in found
        row = recall(target, "idempotency keys", include="retracted", limit=20).results
        assert {r.id: r.status for r in row}[imported_keys] == "retracted"
    finally:
        target.close()


def test_project_export_leaves_other_projects_out(tmp_path, marm_home):
    repo_a, repo_b = git_init(tmp_path / "a"), git_init(tmp_path / "b")
    plain = tmp_path / "plain"
    plain.mkdir()
    ctx, outside = _ctx(marm_home, repo_a), _ctx(marm_home, plain)
    try:
        a = write_memory(ctx, "project a uses tabs").id
        b = write_memory(ctx, "project b uses spaces", project=str(repo_b)).id
        g = write_memory(outside, "everyone uses utf-8").id
        records = [orjson.loads(line) for line in export(ctx).document()]
    finally:
        ctx.close()
        outside.close()
    memory_ids = {r["id"] for r in records if r["type"] == "memory"}
    assert a in memory_ids and b not in memory_ids
    assert records[0]["type"] == "marm-export" and records[0]["project"] == str(repo_a)
    event_ids = {r["entity_id"] for r in records if r["type"] == "event" and r["entity"] == "memory"}
    assert str(a) in event_ids and str(b) not in event_ids
    assert g in memory_ids  # global memories are part of every project's scope


@pytest.mark.parametrize(("content", "message"), [
    ("", "empty"),
    ('{"type": "memory"}\n', "not a marm export"),
    ('{"type": "marm-export", "version": 9}\n', "version 9"),
    ('{"type": "marm-export", "version": 1}\nnot json\n', "line 2 is not JSON"),
    ('{"type": "marm-export", "version": 1}\n{"type": "memory", "id": 1}\n', "memory record lacks"),
    ('{"type": "marm-export", "version": 1}\n{"type": "spaceship"}\n', "unknown record type"),
    ('{"type": "marm-export", "version": 1}\n' + orjson.dumps({
        "type": "memory", "id": 1, "content": "x", "content_hash": "h", "kind": "note", "session": None,
        "project": None, "platform": None, "source": "cli", "recorded_at": "2025-01-01T00:00:00.000000Z",
        "valid_from": None, "valid_to": None, "status": "lost", "status_reason": None,
        "superseded_by": None, "metadata": {}}).decode() + "\n", "unknown memory status"),
])
def test_bad_files_are_refused_before_anything_is_written(ctx, tmp_path, content, message):
    write_memory(ctx, "something already stored")
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    before = events.count(ctx.store())
    with pytest.raises(BadInput, match=message):
        import_(ctx, str(path))
    assert events.count(ctx.store()) == before
