"""Memories valid at a named date are found through the validity index, not a scan."""

from __future__ import annotations

import sqlite3

from marm.store import Store, memories, recall_reads
from marm.store.memories import Filter
from marm.store.migrations import MIGRATIONS, migrate
from marm.text import content_hash


def _add(store, text, project, valid_from=None, recorded_at=None):
    with store.write():
        return memories.insert(store, content=text, content_hash=content_hash(text), kind="note",
                               session=None, project=project, valid_from=valid_from,
                               recorded_at=recorded_at).id


def _valid_between(store, flt, day, limit):
    """The candidates the read model's first statement finds for a query naming ``day``
    (none of these memories names a date itself, so all are valid then)."""
    return recall_reads.facts(store, flt, spans=[day], per_date=limit).dated


def test_valid_between_uses_the_validity_index_and_finds_both_kinds_of_time(tmp_path):
    store = Store.open(tmp_path / "marm.db")
    back_dated = _add(store, "we met Ana in Lisbon", "p", valid_from="2023-07-07T10:00:00.000000Z")
    recorded = _add(store, "the deploy froze", "p", recorded_at="2023-07-07T18:00:00.000000Z")
    _add(store, "another day", "p", valid_from="2023-07-08T10:00:00.000000Z")
    _add(store, "recorded then, valid earlier", "p", valid_from="2023-06-01T00:00:00.000000Z",
         recorded_at="2023-07-07T12:00:00.000000Z")
    elsewhere = _add(store, "same day, other project", "q", valid_from="2023-07-07T11:00:00.000000Z")
    day = ("2023-07-07T00:00:00.000000Z", "2023-07-08T00:00:00.000000Z")
    assert _valid_between(store, Filter(project="p"), day, 10) == [recorded, back_dated]
    assert _valid_between(store, Filter(project="p"), day, 1) == [recorded]
    assert _valid_between(store, Filter(project="q"), day, 10) == [elsewhere]
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    _valid_between(store, Filter(project="p"), day, 10)
    store.conn.set_trace_callback(None)
    plan = " ".join(str(r) for r in store.conn.execute("EXPLAIN QUERY PLAN " + statements[-1]))
    assert "SEARCH m USING INDEX memories_validity" in plan, plan
    store.close()


def test_a_store_from_before_the_index_gets_it_and_keeps_its_memories(tmp_path):
    path = tmp_path / "marm.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("COMMIT")
    conn.execute("INSERT INTO memories (content, content_hash, kind, source, recorded_at)"
                 " VALUES ('old note', 'h', 'note', 'cli', '2023-07-07T09:00:00.000000Z')")
    assert migrate(conn) == len(MIGRATIONS) - 1
    conn.close()
    store = Store.open(path)
    [found] = _valid_between(store, Filter(project=None), ("2023-07-07T00:00:00.000000Z",
                                                           "2023-07-08T00:00:00.000000Z"), 10)
    assert store.conn.execute("SELECT content FROM memories WHERE id = ?", (found,)).fetchone()[0] == "old note"
    store.close()
