"""Pieces of sync on their own: migration 4 on an older store, origin ids, the dir
transport's torn manifest line and idempotent push, and what a wire event carries."""

from __future__ import annotations

import sqlite3

from marm.ops import review as review_ops
from marm.ops import sync as sync_ops
from marm.ops.memory import write_memory
from marm.store import Store, sync_state
from marm.store.migrations import MIGRATIONS, SCHEMA_VERSION
from marm.sync import engine
from marm.sync.protocol import wire_events
from marm.sync.transport_dir import DirTransport


def test_migration_4_stamps_an_origin_once_and_keeps_old_events(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for index, step in enumerate(MIGRATIONS[:3]):
        conn.execute("BEGIN")
        step(conn)
        conn.execute(f"PRAGMA user_version = {index + 1}")
        conn.execute("COMMIT")
    conn.execute("INSERT INTO events (at, action, entity, entity_id, source) VALUES"
                 " ('2026-01-01T00:00:00.000000Z', 'memory.create', 'memory', '1', 'cli')")
    conn.close()
    store = Store.open(path)
    assert store.schema_version() == SCHEMA_VERSION
    first = sync_state.origin(store)
    assert len(first) == 24
    assert store.conn.execute("SELECT origin, origin_seq FROM events").fetchall() == [(None, None)]
    store.close()
    again = Store.open(path)
    assert sync_state.origin(again) == first            # stamped once
    other = Store.open(tmp_path / "other.db")
    assert sync_state.origin(other) != first           # one per store
    again.close()
    other.close()


def test_wire_events_qualify_ids_and_carry_text_only_in_creates(ctx, tmp_path):
    env = {**ctx.env, "MARM_PROJECT": "p1"}
    ctx.env = env
    sync_ops.share(ctx, name="shared-p1")
    a = write_memory(ctx, "NOTE: first text").id
    b = write_memory(ctx, "NOTE: second text").id
    review_ops.supersede(ctx, a, b)
    store = ctx.store()
    own = sync_state.origin(store)
    local = sync_state.pushable(store, 0, sync_state.last_event_id(store), ["p1"], 100)
    wire = wire_events(store, local, sync_state.shares(store))
    assert [w["action"] for w in wire] == ["memory.create", "memory.create", "memory.supersede"]
    assert all(w["project"] == "shared-p1" and w["origin"] == own for w in wire)
    assert wire[2]["memory"] == f"{own}:{a}" and wire[2]["data"]["superseded_by"] == f"{own}:{b}"
    assert wire[0]["data"]["content"] == "NOTE: first text" and "content" not in wire[2]["data"]


def test_dir_push_is_idempotent_and_a_torn_manifest_line_is_ignored(tmp_path):
    t = DirTransport(str(tmp_path / "r"))
    events = [{"origin": "o1", "seq": k, "at": f"2026-01-01T00:00:0{k}Z", "action": "memory.create",
               "project": "p", "memory": f"o1:{k}", "data": {"content": f"text {k}", "content_hash": f"h{k}"}}
              for k in range(1, 4)]
    assert t.push(events) == 3
    assert t.push(events) == 0                           # again: nothing new
    assert t.push(events[:1] + [{**events[0], "seq": 9, "memory": "o1:9"}]) == 1
    got, cursor = t.pull("", "o2", 100)
    assert sorted(e["seq"] for e in got) == [1, 2, 3, 9]
    with open(tmp_path / "r" / "manifests" / "o1.jsonl", "ab") as fh:
        fh.write(b'{"chunk": "abc')                      # a push killed while appending
    more, cursor2 = t.pull(cursor, "o2", 100)
    assert more == [] and t.behind(cursor2, "o2") == 0
    assert t.pull("", "o1", 100)[0] == []               # its own events never come back


def test_remote_urls_without_a_password_only():
    import pytest

    from marm.errors import BadInput

    assert engine.check_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert engine.check_url("postgres://u@h/db?sslmode=require") == "postgres://u@h/db?sslmode=require"
    assert engine.check_url("dir:../team") == "dir:../team"
    for bad in ("postgresql://u:pw@h/db", "postgresql://u@h/db?password=pw", "dir:", "mysql://u@h/db"):
        with pytest.raises(BadInput):
            engine.check_url(bad)


def test_sync_batch_sets_the_events_per_request_each_way(ctx, tmp_path):
    import pytest

    from marm.errors import BadInput
    from marm.ops import system as system_ops

    ctx.env = {**ctx.env, "MARM_PROJECT": "p1"}
    sync_ops.share(ctx, name="shared-p1")
    sync_ops.remote_add(ctx, "team", f"dir:{tmp_path / 'remote'}")
    for k in range(7):
        write_memory(ctx, f"NOTE: batched fact {k}")
    requests: list[tuple[str, int]] = []

    class Counting(DirTransport):
        def push(self, events):
            requests.append(("push", len(events)))
            return super().push(events)

    system_ops.config_set(ctx, "sync.batch", "3")
    report = engine.sync(ctx.store(), "team", Counting(str(tmp_path / "remote")), batch=sync_ops._batch(ctx))
    assert report.pushed == 7 and requests == [("push", 3), ("push", 3), ("push", 1)]
    with pytest.raises(BadInput):
        system_ops.config_set(ctx, "sync.batch", "0")
    system_ops.config_set(ctx, "sync.batch", "default")
    ctx.env = {**ctx.env, "MARM_SYNC_BATCH": "lots"}
    with pytest.raises(BadInput, match="sync.batch"):
        sync_ops.sync(ctx)
